//go:build e2e

package disruptive

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The container runtime restarts under the daemon: containerd and the CRI proxy the daemon dials
// (hack/cluster.sh's "runtime") are stopped in the middle of the daemon's work and started again.
// The containers keep running meanwhile (containerd's shims outlive it). The daemon must say
// so on /readyz (check "cri") while the runtime is away, stay up (no restart of its container)
// and finish its work once the runtime is back.
const (
	// runtimeDownTimeout bounds runtime stopped → the daemon's "cri" check failing: one CRI probe
	// interval (10 s) plus its timeout, with margin.
	runtimeDownTimeout = 45 * time.Second
	// runtimeUpTimeout bounds runtime started → the "cri" check passing again: the gRPC
	// reconnect backoff (at most 5 s) and one probe interval.
	runtimeUpTimeout = time.Minute
	// runtimeStopSeconds is how long the CRR test's container takes to exit on SIGTERM: longer
	// than the runtime is away, so the daemon's stop is still under way when it returns.
	runtimeStopSeconds = 45
)

// runtimeRestart stops the runtime, waits until the daemon reports it down, checks what must
// hold while it is down, then starts it and waits until the daemon reports it back.
func runtimeRestart(ctx context.Context, t *testing.T, e *faultEnv, whileDown func()) {
	t.Helper()
	stoppedAt := time.Now()
	e.f.StopComponent(ctx, t, framework.ComponentRuntime)
	r := framework.WaitDaemonCheck(ctx, t, "cri", false, runtimeDownTimeout)
	line, _, _ := r.Check("cri")
	t.Logf("%s after the stop, the daemon's /readyz: %s", time.Since(stoppedAt).Round(time.Millisecond), line)
	if whileDown != nil {
		whileDown()
	}
	e.f.StartComponent(ctx, t, framework.ComponentRuntime)
	startedAt := time.Now()
	r = framework.WaitDaemonCheck(ctx, t, "cri", true, runtimeUpTimeout)
	line, _, _ = r.Check("cri")
	t.Logf("runtime away for %s; %s after the start, the daemon's /readyz: %s", startedAt.Sub(stoppedAt).Round(time.Millisecond),
		time.Since(startedAt).Round(time.Millisecond), line)
}

// The runtime restarts while the daemon stops a container for a CRR: the container takes its
// time to exit on SIGTERM, so the daemon's CRI StopContainer call is in flight when the runtime
// goes away. Once the runtime is back the daemon finishes the CRR: the container is stopped
// exactly once (one restart, counted by the kubelet) and the CRR completes Succeeded.
func TestRuntimeRestartMidCRR(t *testing.T) {
	ctx := framework.Context(t, 10*time.Minute)
	e := faultNewEnv(ctx, t, "runtime-crr")
	daemon := resDaemonInstance(ctx, t, e)
	before := e.f.CreateRunningPod(ctx, t, resSlowStopPod(e.f, e.ns, "web", runtimeStopSeconds, "main"))

	resCreateCRR(ctx, t, e.c, resCRR(e.ns, "r", "web", runtimeStopSeconds+30, "main"))
	framework.WaitCRR(ctx, t, e.c, e.ns, "r", time.Minute, "CRR r stopping main", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		st := resCRRState(c, "main")
		return st.Phase == appsv1alpha1.ContainerRecreateRequestRecreating && !st.IsKilled
	})
	// The container logs SIGTERM: the daemon's StopContainer has reached it and waits.
	framework.WaitFor(ctx, t, time.Minute, "container main to get SIGTERM", func(ctx context.Context) (bool, string, error) {
		logs, err := e.f.PodLogs(ctx, e.ns, "web", "main")
		if err != nil {
			return false, "", framework.Retry(err)
		}
		return strings.Contains(logs, "got TERM"), logs, nil
	})

	runtimeRestart(ctx, t, e, func() {
		crr, err := e.c.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, "r", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading CRR r: %v", err)
		}
		t.Logf("CRR while the runtime is down: %s", resDescribeCRR(crr))
		if st := resCRRState(crr, "main"); crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted ||
			st.Phase == appsv1alpha1.ContainerRecreateRequestFailed {
			t.Errorf("the daemon gave up on the CRR while the runtime was down: %s", resDescribeCRR(crr))
		}
	})

	done := resWaitCRRCompleted(ctx, t, e.c, e.ns, "r", "main")
	t.Logf("CRR completed: %s", resDescribeCRR(done))
	resRequireRecreatedOnce(ctx, t, e.f, before, "main")
	resRequireSame(ctx, t, e.f, []resInstance{daemon})
}

// The runtime restarts while the daemon pulls an image: the registry holds the pull (stall/)
// until containerd, its client, goes away. Once the runtime is back the daemon pulls again and
// reports Succeeded, only with the image really in the runtime and never before the pull that
// worked; the tag is never reported Failed on the way.
func TestRuntimeRestartMidPull(t *testing.T) {
	ctx := framework.Context(t, 10*time.Minute)
	e := faultNewEnv(ctx, t, "runtime-pull")
	daemon := resDaemonInstance(ctx, t, e)
	image := e.faultFreshImage(ctx, t, "stall/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	succeeded := e.faultCheckFirstSucceeded(w, image)
	since := time.Now()

	// The attempts made while the runtime is away fail at once; they must not use up the
	// retries: backoffLimit 1 leaves a single retry for failures of the pull itself.
	e.faultStartHeldPull(ctx, t, w, "pull", image)
	if recs := framework.PullRecordsFor(t, image, since); len(recs) != 0 {
		t.Fatalf("the pull ended before the runtime was stopped: %v", recs)
	}

	stoppedAt := time.Now()
	runtimeRestart(ctx, t, e, func() {
		if o, seen := w.Find(e.node, func(o framework.TagObservation) bool {
			return o.Status != nil && (o.Status.Phase == appsv1beta1.ImagePhaseSucceeded || o.Status.Phase == appsv1beta1.ImagePhaseFailed)
		}); seen {
			t.Errorf("the tag was reported %s while the runtime was down: %s", o.Status.Phase, w.Summary(e.node))
		}
	})

	done := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, "pull", faultJobTimeout)
	t.Logf("job finished %s after the runtime was stopped: %s", time.Since(stoppedAt).Round(time.Millisecond), done.Status.Message)
	e.faultRequireSucceeded(ctx, t, done)

	ok := faultOneOKPullAfter(ctx, t, image, since, stoppedAt, "the runtime was stopped")
	t.Logf("the PullImage call that worked: %s", ok)
	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseSucceeded)
	if st.ImageID != ok.ImageRef {
		t.Errorf("NodeImage reports image ID %s, the successful PullImage call returned %s", st.ImageID, ok.ImageRef)
	}
	succeeded.require(t, w, e.node, ok)
	e.faultNeverPhase(t, w, appsv1beta1.ImagePhaseFailed)
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "gone while held"); lines != nil && len(lines) == 0 {
		t.Errorf("the registry never saw the interrupted pull's client go away")
	}
	e.faultRequirePresent(ctx, t, image, st.ImageID)
	resRequireSame(ctx, t, e.f, []resInstance{daemon})
}
