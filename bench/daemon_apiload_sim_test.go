//go:build bench

package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
	"github.com/nodekruise/kruise/test/nodesim"
)

// The daemon's identity: every real kruise-daemon runs as this service account with a token bound
// to its pod (hence to its node); the simulated ones get a token bound to their Node directly,
// which puts the same node name into the user info the admission policy and the audit log see.
const (
	simDaemonNamespace      = "kruise-system"
	simDaemonServiceAccount = "kruise-daemon"
	simDaemonUser           = "system:serviceaccount:" + simDaemonNamespace + ":" + simDaemonServiceAccount
)

// simTokenTTL outlives the longest run the benchmark's settings allow: the daemon reads its
// kubeconfig once and cannot renew a static token.
const simTokenTTL = 2 * time.Hour

// simStopTimeout is how long a daemon gets to stop on SIGTERM before it is killed.
const simStopTimeout = 15 * time.Second

// simDaemon is one kruise-daemon process acting for a simulated node.
type simDaemon struct {
	node    string
	cmd     *exec.Cmd
	sock    string // health and metrics unix socket
	logPath string
	started time.Time
	ready   time.Time
	done    chan struct{} // closed when the process has exited
	exitErr error         // valid after done
	health  *http.Client
}

// writeDaemonKubeconfig writes a kubeconfig for node's daemon: the API server and CA of base, and
// a token of kruise-system/kruise-daemon bound to the Node, nothing else.
func writeDaemonKubeconfig(ctx context.Context, client kubernetes.Interface, base *rest.Config, node *corev1.Node, path string) error {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(simTokenTTL / time.Second)),
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID,
		},
	}}
	tok, err := client.CoreV1().ServiceAccounts(simDaemonNamespace).CreateToken(ctx, simDaemonServiceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token bound to node %s: %w", node.Name, err)
	}
	ca := base.CAData
	if len(ca) == 0 && base.CAFile != "" {
		if ca, err = os.ReadFile(base.CAFile); err != nil {
			return fmt.Errorf("reading the API server CA: %w", err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: base.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[node.Name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["daemon"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: node.Name}
	cfg.CurrentContext = "daemon"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing the kubeconfig of node %s: %w", node.Name, err)
	}
	return nil
}

// daemonEnv is the test's environment without what would make a daemon act for another node or
// pod: the downward-API variables and $KUBECONFIG (the admin's). Without $POD_NAME the
// coexistence guard looks for OpenKruise's daemon only, which a simulated node never has.
func daemonEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NODE_NAME", "POD_NAME", "POD_NAMESPACE", "KUBECONFIG":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// copyBinary copies the executable src into dir and returns the copy's path and SHA-256.
func copyBinary(src, dir string) (string, string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", "", err
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		return "", "", err
	}
	return dst, fmt.Sprintf("%x", sha256.Sum256(b)), nil
}

// startSimDaemon starts bin for node with the kubeconfig at kubeconfig, its health endpoints on a
// unix socket in dir and its log in dir. The flags are the DaemonSet's, with the CRI endpoint
// named directly instead of probed under a mounted /var/run.
func startSimDaemon(bin, dir, node, kubeconfig, criSocket string) (*simDaemon, error) {
	d := &simDaemon{
		node:    node,
		sock:    filepath.Join(dir, node+".sock"),
		logPath: filepath.Join(dir, node+".log"),
		done:    make(chan struct{}),
	}
	d.health = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.sock)
		},
	}}
	logf, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	d.cmd = exec.Command(bin,
		"--node-name="+node,
		"--kubeconfig="+kubeconfig,
		"--addr=unix://"+d.sock,
		"--runtime-endpoint=unix://"+criSocket,
		"--namespace="+simDaemonNamespace,
		"--logging-format=text",
		"--v=2",
	)
	d.cmd.Env = daemonEnv()
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// If the test binary dies without its cleanups (a -timeout panic), the daemons die with it.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the daemon of %s: %w", node, err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

func (d *simDaemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// readyz asks the daemon's /readyz once.
func (d *simDaemon) readyz(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://daemon/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := d.health.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s", resp.Status)
	}
	return nil
}

// waitReady polls /readyz until it answers 200 and records when; it fails at once when the
// process exits.
func (d *simDaemon) waitReady(ctx context.Context, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if d.exited() {
			return false, fmt.Errorf("daemon of %s exited: %v; log tail:\n%s", d.node, d.exitErr, d.logTail(2048))
		}
		if last = d.readyz(ctx); last != nil {
			return false, nil
		}
		d.ready = time.Now()
		return true, nil
	})
	if err != nil && last != nil && !d.exited() {
		return fmt.Errorf("daemon of %s not ready (%v): %w; log tail:\n%s", d.node, last, err, d.logTail(2048))
	}
	return err
}

// stop sends SIGTERM and, if the daemon has not exited after simStopTimeout, kills it.
func (d *simDaemon) stop() error {
	if d.exited() {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(simStopTimeout):
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	return fmt.Errorf("daemon of %s (pid %d) ignored SIGTERM for %s and was killed", d.node, d.cmd.Process.Pid, simStopTimeout)
}

func (d *simDaemon) logTail(n int) string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// deleteSimRun deletes the simulated Nodes and NodeImages of one run (nodesim.DeleteNodes would
// take every run's) and the heartbeat Leases of nodes, and waits until the Nodes are gone. The
// Leases are owned by their Node, but the garbage collector may take its time.
func deleteSimRun(ctx context.Context, c nodesim.Clients, run string, nodes []string) error {
	sel := metav1.ListOptions{LabelSelector: nodesim.Label + "=" + run}
	list, err := c.Kube.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		return fmt.Errorf("listing the simulated nodes of run %s: %w", run, err)
	}
	var errs []error
	for i := range list.Items {
		if err := c.Kube.CoreV1().Nodes().Delete(ctx, list.Items[i].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := c.Kruise.AppsV1beta1().NodeImages().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		errs = append(errs, fmt.Errorf("deleting the NodeImages of run %s: %w", run, err))
	}
	for _, n := range nodes {
		err := c.Kube.CoordinationV1().Leases(simDaemonNamespace).Delete(ctx, daemonlease.Name(n), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		left, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, Limit: 1})
		return err == nil && len(left.Items) == 0, nil
	})
}
