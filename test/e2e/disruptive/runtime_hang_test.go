//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// hangCallTimeout is the daemon's --runtime-request-timeout for the test: the CRI call deadline
// that must run out on the held calls (the default, 2 minutes, would only make the test longer).
const hangCallTimeout = 20 * time.Second

// hangReportTimeout bounds runtime hung → a CRR created meanwhile saying it waits for the
// runtime: the daemon's CRI call deadline runs out on the held ListContainers, plus a sync's
// backoff.
const hangReportTimeout = hangCallTimeout + time.Minute

// hungRuntimeMethods are the RuntimeService calls the proxy holds for the daemon: the readiness
// probe's and a CRR's. The image service keeps answering, so that the daemon's other work can be
// seen going on.
var hungRuntimeMethods = []string{"Version", "ListContainers", "ContainerStatus", "StopContainer", "ExecSync"}

// The container runtime hangs for the daemon: the CRI proxy takes its runtime calls and never
// answers them (the kubelet, which talks to containerd directly, and the test's own CRI client are
// not held). The daemon must not wait for ever: /readyz fails on "cri" (each probe has its own
// short deadline), and a CRR created meanwhile reports that it waits for the runtime once the CRI
// call deadline (--runtime-request-timeout, 20 s for the test) ran out, without giving up or
// stopping anything. Other work goes on: the daemon
// pulls an image (its image calls are answered), keeps its heartbeat (the CRR is not completed as
// "no live daemon"), and the kubelet starts a pod. Once the runtime answers again the CRR
// completes with each container stopped exactly once, and no kruise container restarted.
func TestHungRuntime(t *testing.T) {
	ctx := framework.Context(t, 15*time.Minute)
	e := faultNewEnv(ctx, t, "runtime-hang")
	hangSetDaemonArg(ctx, t, e.f, "--runtime-request-timeout", hangCallTimeout.String())
	kruise := []resInstance{resDaemonInstance(ctx, t, e)}
	for _, p := range leaderWaitReplicasAvailable(ctx, t, e.f, 2*time.Minute) {
		kruise = append(kruise, resInstanceOf(t, &p, leaderContainer))
	}
	before := e.f.CreateRunningPod(ctx, t, resRecordStops(e.f.BusyboxPod(e.ns, "web", "main", "side")))
	image := e.faultFreshImage(ctx, t, "public/")

	release := framework.HangRuntime(ctx, t, framework.RuntimeHang{
		Methods: hungRuntimeMethods,
		Clients: []string{framework.DaemonProcessName},
	})
	hungAt := time.Now()
	r := framework.WaitDaemonCheck(ctx, t, "cri", false, runtimeDownTimeout)
	line, _, _ := r.Check("cri")
	t.Logf("%s after the hang, the daemon's /readyz: %s", time.Since(hungAt).Round(time.Millisecond), line)

	resCreateCRR(ctx, t, e.c, resCRR(e.ns, "r", "web", 30, "main", "side"))
	crr := framework.WaitCRR(ctx, t, e.c, e.ns, "r", hangReportTimeout, "CRR r waiting for the runtime", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return strings.HasPrefix(c.Status.Message, "waiting for the container runtime: ")
	})
	t.Logf("%s after the hang: %s", time.Since(hungAt).Round(time.Millisecond), resDescribeCRR(crr))
	if !strings.Contains(crr.Status.Message, "did not answer within "+hangCallTimeout.String()) {
		t.Errorf("the CRR's message does not say the runtime did not answer in time: %q", crr.Status.Message)
	}

	// Other work goes on meanwhile.
	job := e.faultRunJob(ctx, t, "pull", image, 0)
	e.faultRequireSucceeded(ctx, t, job)
	e.f.CreateRunningPod(ctx, t, e.f.BusyboxPod(e.ns, "other", "main"))

	// Nothing was given up on or stopped while the runtime hung.
	crr, err := e.c.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading CRR r: %v", err)
	}
	t.Logf("CRR before the release, %s after the hang: %s", time.Since(hungAt).Round(time.Millisecond), resDescribeCRR(crr))
	if crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
		t.Fatalf("the CRR completed while the runtime hung: %s", resDescribeCRR(crr))
	}
	for _, c := range []string{"main", "side"} {
		if st := resCRRState(crr, c); st.Phase == appsv1alpha1.ContainerRecreateRequestFailed || st.IsKilled {
			t.Errorf("container %s was acted on while the runtime hung: %s", c, resDescribeCRR(crr))
		}
	}
	hungRequireNotRestarted(ctx, t, e.f, before, "main", "side")
	if r, err := framework.DaemonReadyz(ctx); err != nil || r.OK {
		t.Errorf("the daemon's /readyz passed while the runtime hung: %v %v", r, err)
	}

	release()
	releasedAt := time.Now()
	done := resWaitCRRCompleted(ctx, t, e.c, e.ns, "r", "main", "side")
	t.Logf("CRR completed %s after the release: %s", time.Since(releasedAt).Round(time.Millisecond), resDescribeCRR(done))
	resRequireRecreatedOnce(ctx, t, e.f, before, "main", "side")
	framework.WaitDaemonCheck(ctx, t, "cri", true, runtimeUpTimeout)
	resRequireSame(ctx, t, e.f, kruise)
}

// hungRequireNotRestarted checks that the pod's containers run the instances they ran before.
func hungRequireNotRestarted(ctx context.Context, t *testing.T, f *framework.Framework, before *corev1.Pod, containers ...string) {
	t.Helper()
	p, err := f.Client.CoreV1().Pods(before.Namespace).Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod %s: %v", before.Name, err)
	}
	for _, name := range containers {
		b, a := framework.ContainerStatusOf(before, name), framework.ContainerStatusOf(p, name)
		if b == nil || a == nil || a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount {
			t.Errorf("container %s of pod %s changed while the runtime hung: %s", name, before.Name, hungDescribeStatus(b, a))
		}
	}
}

func hungDescribeStatus(before, after *corev1.ContainerStatus) string {
	if before == nil || after == nil {
		return "no status"
	}
	return fmt.Sprintf("instance %s (restarts %d), was %s (restarts %d)", after.ContainerID, after.RestartCount, before.ContainerID, before.RestartCount)
}

// hangSetDaemonArg runs kruise-daemon with flag=value (replacing any value it has) until the test
// ends, when its args are put back as found; each change waits for the daemon pods to run it.
func hangSetDaemonArg(ctx context.Context, t *testing.T, f *framework.Framework, flag, value string) {
	t.Helper()
	var orig []string
	set := func(ctx context.Context, args func([]string) []string) ([]string, error) {
		var want []string
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ds, err := f.Client.AppsV1().DaemonSets(framework.KruiseNamespace).Get(ctx, hardDaemonSet, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for i := range ds.Spec.Template.Spec.Containers {
				c := &ds.Spec.Template.Spec.Containers[i]
				if c.Name != faultDaemonContainer {
					continue
				}
				if orig == nil {
					orig = slices.Clone(c.Args)
				}
				want = args(c.Args)
				c.Args = want
				_, err = f.Client.AppsV1().DaemonSets(framework.KruiseNamespace).Update(ctx, ds, metav1.UpdateOptions{})
				return err
			}
			return fmt.Errorf("DaemonSet %s has no container %s", hardDaemonSet, faultDaemonContainer)
		})
		return want, err
	}
	want, err := set(ctx, func(args []string) []string {
		out := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
		return append(out, flag+"="+value)
	})
	if err != nil {
		t.Fatalf("setting %s=%s on kruise-daemon: %v", flag, value, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := set(ctx, func([]string) []string { return orig }); err != nil {
			t.Errorf("putting back kruise-daemon's args %q: %v", orig, err)
			return
		}
		hangWaitDaemonArgs(ctx, t, f, orig)
	})
	hangWaitDaemonArgs(ctx, t, f, want)
}

// hangWaitDaemonArgs waits until the daemon's DaemonSet is rolled out and each of its pods runs
// args and is ready.
func hangWaitDaemonArgs(ctx context.Context, t *testing.T, f *framework.Framework, args []string) {
	t.Helper()
	faultWaitDaemonRolledOut(ctx, t, f, fmt.Sprintf("args %q", args), func(c *corev1.Container) bool { return slices.Equal(c.Args, args) })
}
