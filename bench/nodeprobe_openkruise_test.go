//go:build bench

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodekruise/kruise/test/netns"
	"github.com/nodekruise/kruise/test/reference"
)

// OpenKruise's side of the node-probe benchmark: its kruise-manager (PodProbeMarker and
// NodePodProbe controllers) and its kruise-daemon (the prober), both host processes built from
// the Go module proxy. Both act on the objects kruise acts on (the same CRDs, the NodePodProbe
// named after the node), so for the phase kruise-controller is fenced (leasefence_test.go) and
// kruise-daemon is taken off the node (a nodeSelector no node matches), and both come back after.

const (
	// okDaemonVarRun is where OpenKruise's daemon looks for the CRI socket (its Pod mounts the
	// host's /var/run there; --socket-file names a file inside). The benchmark makes it a
	// symlink to the directory of the node's containerd socket for the phase.
	okDaemonVarRun = "/hostvarrun"
	// noDaemonLabel is a node label no node has: kruise-daemon's nodeSelector during the phase.
	noDaemonLabel = "bench.kruise.io/no-kruise-daemon"
	daemonDS      = "kruise-daemon"
)

// okProbeGates: kruise-manager needs KruiseDaemon for its NodePodProbe controller (and
// PodProbeMarkerGate follows it); the image pre-download, pull-job, budget, spread and sidecar
// terminator controllers are off so that it acts on nothing else of the cluster's.
const okProbeGates = "KruiseDaemon=true,PodProbeMarkerGate=true,EnableExternalCerts=true,ImagePullJobGate=false," +
	"PreDownloadImageForInPlaceUpdate=false,PreDownloadImageForDaemonSetUpdate=false,WorkloadSpread=false," +
	"PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=false,SidecarTerminator=false"

// buildOpenKruiseDaemon builds OpenKruise's kruise-daemon unless the cache has it.
func buildOpenKruiseDaemon(ctx context.Context, logf func(string, ...any)) (string, error) {
	b, err := reference.BuildPackage(ctx, reference.BuildOptions{
		Dir: openKruiseCache, Package: reference.Module + "/cmd/daemon",
		Out: filepath.Join(openKruiseCache, "bin", "kruise-daemon"), Logf: logf,
	})
	return b.Bin, err
}

// okProbes is OpenKruise running for the phase.
type okProbes struct {
	ok     *openKruise
	daemon *netns.Process
	fence  *leaseFence
	undo   []func(context.Context) error
}

// pids are kruise-manager's and kruise-daemon's.
func (o *okProbes) pids() (manager, daemon int) {
	return o.ok.proc.PID(), o.daemon.PID()
}

// startOpenKruiseProbes fences kruise, starts OpenKruise's manager and daemon and waits until
// both are ready. stop undoes everything; the caller must call it, also on failure.
func (e *env) startOpenKruiseProbes(ctx context.Context, t *testing.T, b openKruiseBuild, daemonBin string) (*okProbes, error) {
	ok, err := e.newOpenKruise(b)
	o := &okProbes{ok: ok}
	if err != nil {
		return o, err
	}
	ok.gates = okProbeGates
	steps := []startStep{
		{"no kruise workload in the cluster", e.requireNoWorkloads},
		{"namespace", ok.createNamespace},
		{"certificates", ok.writeSecret},
		{"network namespace", ok.startNetns},
		{"kruise-daemon off the node", o.evictKruiseDaemon},
		{"kruise-controller fenced", o.fenceKruise},
		{"kruise-manager", ok.startManager},
		{"its PodProbeMarker and NodePodProbe controllers", func(ctx context.Context) error {
			return waitManagerControllers(ctx, ok.proc, filepath.Join(ok.dir, "kruise-manager.log"),
				[]string{"PodProbeMarker-controller", "NodePodProbe-controller"})
		}},
		{okDaemonVarRun + " → the CRI socket's directory", o.linkVarRun},
		{"kruise-daemon (OpenKruise's)", func(ctx context.Context) error { return o.startDaemon(ctx, daemonBin) }},
	}
	return o, runSteps(ctx, t, "OpenKruise probes", steps)
}

// stop undoes the phase, last step first.
func (o *okProbes) stop(ctx context.Context) error {
	var errs []error
	for i := len(o.undo) - 1; i >= 0; i-- {
		if err := o.undo[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	o.undo = nil
	errs = append(errs, o.ok.stop(ctx))
	return errors.Join(errs...)
}

// evictKruiseDaemon gives kruise-daemon's DaemonSet a nodeSelector no node matches and waits until
// its pod on the node is gone; undo removes it and waits for a Ready pod again.
func (o *okProbes) evictKruiseDaemon(ctx context.Context) error {
	e := o.ok.e
	dss := e.client.AppsV1().DaemonSets(kruiseNamespace)
	patch := func(ctx context.Context, value string) error {
		body := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%s}}}}}`, noDaemonLabel, value)
		_, err := dss.Patch(ctx, daemonDS, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	daemonPods := func(ctx context.Context) (ready, all int, err error) {
		l, err := e.client.CoreV1().Pods(kruiseNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + footprintNode})
		if err != nil {
			return 0, 0, err
		}
		for i := range l.Items {
			p := &l.Items[i]
			if len(p.OwnerReferences) == 0 || p.OwnerReferences[0].Kind != "DaemonSet" || p.OwnerReferences[0].Name != daemonDS {
				continue
			}
			all++
			if p.DeletionTimestamp == nil && podCond(p, corev1.PodReady) {
				ready++
			}
		}
		return ready, all, nil
	}
	o.undo = append(o.undo, func(ctx context.Context) error {
		if err := patch(ctx, "null"); err != nil {
			return fmt.Errorf("taking the nodeSelector off %s: %w", daemonDS, err)
		}
		return wait.PollUntilContextTimeout(ctx, time.Second, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
			ready, _, err := daemonPods(ctx)
			return err == nil && ready == 1, nil
		})
	})
	if err := patch(ctx, strconv.Quote("true")); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		_, n, err := daemonPods(ctx)
		return err == nil && n == 0, nil
	})
}

func (o *okProbes) fenceKruise(ctx context.Context) error {
	f, err := o.ok.e.fenceKruise(ctx)
	if f != nil {
		o.fence = f
		o.undo = append(o.undo, func(ctx context.Context) error {
			if err := f.release(ctx); err != nil {
				return fmt.Errorf("releasing kruise-controller's Lease: %w", err)
			}
			return nil
		})
	}
	return err
}

// linkVarRun makes /hostvarrun a symlink to the directory of the node's CRI socket (it must not
// exist already, unless as such a symlink left by an interrupted run).
func (o *okProbes) linkVarRun(context.Context) error {
	dir := filepath.Dir(criEndpoint)
	if cur, err := os.Readlink(okDaemonVarRun); err == nil {
		if cur != dir {
			return fmt.Errorf("%s is a symlink to %s, not %s: not the benchmark's", okDaemonVarRun, cur, dir)
		}
	} else if _, err := os.Lstat(okDaemonVarRun); err == nil {
		return fmt.Errorf("%s exists and is not the benchmark's symlink", okDaemonVarRun)
	} else if err := os.Symlink(dir, okDaemonVarRun); err != nil {
		return err
	}
	o.undo = append(o.undo, func(context.Context) error { return os.Remove(okDaemonVarRun) })
	return nil
}

// startDaemon starts OpenKruise's kruise-daemon for the node (its metrics and health on a free
// loopback port, no pprof, no pod watching: its NodePodProbe prober needs none) and waits for
// its /healthz.
func (o *okProbes) startDaemon(ctx context.Context, bin string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logPath := filepath.Join(o.ok.dir, "kruise-daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin,
		"--addr="+addr,
		"--enable-pprof=false",
		"--socket-file="+filepath.Base(criEndpoint),
		"--feature-gates=DaemonWatchingPod=false",
		"--v=2",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+os.Getenv("KUBECONFIG"), "NODE_NAME="+footprintNode)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := netns.StartProcess(cmd)
	if err != nil {
		logFile.Close()
		return err
	}
	go func() { <-p.Done(); logFile.Close() }()
	o.daemon = p
	o.undo = append(o.undo, func(context.Context) error { p.Stop(10 * time.Second); return nil })
	hc := &http.Client{Timeout: 2 * time.Second}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("OpenKruise's kruise-daemon exited (log %s): %v", logPath, err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("OpenKruise's kruise-daemon healthy (log %s): %w", logPath, err)
	}
	return nil
}

// freePort is a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ignoreNotFound is err unless it is a NotFound.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
