//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Pulls from a registry that misbehaves (the fault prefixes of test/registry) and a daemon killed
// in the middle of a pull: each test checks that no pull is lost and none is reported Succeeded
// that did not happen.
const (
	// faultJobTimeout bounds an ImagePullJob from creation to completion: a handful of attempts
	// of a tiny image with the daemon's backoff of 2 s, 4 s, 8 s, 16 s between them.
	faultJobTimeout = 3 * time.Minute
	// faultRestartTimeout bounds a kill of the daemon's container → the daemon Ready again. The
	// kubelet restarts a container that dies for the first time at once, but one that died
	// within the last 10 minutes only after its crash-loop backoff (10 s, 20 s, 40 s, ... up to
	// 5 minutes; other disruptive tests stop the daemon too); then the readiness probe must pass.
	faultRestartTimeout = 6 * time.Minute
	// faultDaemonContainer is the daemon's container in deploy/.
	faultDaemonContainer = "daemon"
	// faultBlobs is how many blobs framework.PushImage's images have: a config and one layer.
	faultBlobs = 2
)

type faultEnv struct {
	f    *framework.Framework
	c    versioned.Interface
	rt   cri.Runtime
	ns   string
	node string
}

func faultNewEnv(ctx context.Context, t *testing.T, prefix string) *faultEnv {
	t.Helper()
	f := framework.New(t)
	return &faultEnv{f: f, c: f.KruiseClient(t), rt: framework.CRI(ctx, t), ns: f.NewNamespace(ctx, t, prefix), node: framework.NodeName()}
}

// faultFreshImage pushes a new image under prefix, which the registry must serve (the test is
// skipped on a registry older than the prefix), and makes sure the node does not have it.
func (e *faultEnv) faultFreshImage(ctx context.Context, t *testing.T, prefix string) string {
	t.Helper()
	if !e.f.RegistryHasPrefix(t, prefix) {
		t.Skipf("the running registry at %s does not serve %s; test/registry has it now: restart the local cluster "+
			"(make down && make deploy) to rebuild the registry", e.f.Registry, prefix)
	}
	image := e.f.UniqueImage(prefix)
	framework.PushImage(t, image, nil)
	if err := e.rt.RemoveImage(ctx, image); err != nil {
		t.Fatalf("removing %s from the node: %v", image, err)
	}
	return image
}

// faultRepoPath is the repository of image without the registry host and the tag, as the
// registry's log shows it.
func (e *faultEnv) faultRepoPath(image string) string {
	repo, _ := framework.SplitImage(image)
	return strings.TrimPrefix(repo, e.f.Registry+"/")
}

// faultJob is an ImagePullJob of image on the real node with backoffLimit retries.
func (e *faultEnv) faultJob(name, image string, backoffLimit int32) *appsv1beta1.ImagePullJob {
	job := framework.NewImagePullJob(e.ns, name, image)
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To(backoffLimit)}
	return job
}

// faultRequireSucceeded checks a finished job succeeded on exactly the real node.
func (e *faultEnv) faultRequireSucceeded(ctx context.Context, t *testing.T, job *appsv1beta1.ImagePullJob) {
	t.Helper()
	s := job.Status
	if s.Desired != 1 || s.Succeeded != 1 || s.Failed != 0 || s.Active != 0 || len(s.FailedNodes) != 0 {
		t.Fatalf("want a job that succeeded on the one node; got %s", framework.DescribeImagePullJob(ctx, e.c, job))
	}
}

// faultRequirePresent checks that the node's runtime has image, with the ID the daemon reported.
func (e *faultEnv) faultRequirePresent(ctx context.Context, t *testing.T, image, wantID string) {
	t.Helper()
	info, present, err := e.rt.ImageStatus(ctx, image)
	if err != nil || !present {
		t.Fatalf("image %s is not on the node although its pull was reported Succeeded (present=%t, err=%v)", image, present, err)
	}
	if info.ID != wantID {
		t.Errorf("image %s is on the node as %s, but the pull was reported with image ID %s", image, info.ID, wantID)
	}
}

// faultFinalStatus waits until the watch has seen image reach phase on the node with the spec's
// version, checks that the last status the node showed for the tag is that one (a finished job's
// tag may have left the NodeImage since), and returns it.
func (e *faultEnv) faultFinalStatus(ctx context.Context, t *testing.T, w *framework.NodeImageWatch, image string, phase appsv1beta1.ImagePullPhase) appsv1beta1.ImageTagStatus {
	t.Helper()
	w.WaitObservation(ctx, t, e.node, time.Minute, string(phase)+" of the spec's version", func(o framework.TagObservation) bool {
		return o.Spec != nil && o.Status != nil && o.Status.Phase == phase && o.Status.Version == o.Spec.Version
	})
	var last *appsv1beta1.ImageTagStatus
	for _, o := range w.History(e.node) {
		if o.Status != nil {
			last = o.Status
		}
	}
	if last == nil || last.Phase != phase {
		t.Fatalf("the last status NodeImage %s showed of %s is not %s: %s", e.node, image, phase, w.Summary(e.node))
	}
	return *last
}

// faultRecords returns the proxy's records of image since, in arrival order, once one has code OK
// (want OK) or there are n (want n > 0).
func faultRecords(ctx context.Context, t *testing.T, image string, since time.Time, n int) []framework.PullRecord {
	t.Helper()
	var recs []framework.PullRecord
	desc := "a PullImage call with code OK"
	if n > 0 {
		desc = fmt.Sprintf("%d PullImage calls", n)
	}
	framework.WaitFor(ctx, t, time.Minute, "CRI proxy records of "+image+": "+desc, func(context.Context) (bool, string, error) {
		recs = framework.PullRecordsFor(t, image, since)
		slices.SortFunc(recs, func(a, b framework.PullRecord) int { return a.Time.Compare(b.Time) })
		if n > 0 {
			return len(recs) >= n, fmt.Sprintf("%v", recs), nil
		}
		return slices.ContainsFunc(recs, func(r framework.PullRecord) bool { return r.Code == "OK" }), fmt.Sprintf("%v", recs), nil
	})
	return recs
}

// faultCheckBackoff checks that failed attempt i (from 1) was followed by a wait of at least
// the daemon's backoff (2 s doubling) before attempt i+1 arrived at the runtime.
func faultCheckBackoff(t *testing.T, recs []framework.PullRecord) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		want := 2 * time.Second << (i - 1)
		if gap := recs[i].Time.Sub(recs[i-1].Time); gap < want {
			t.Errorf("attempt %d arrived %s after attempt %d, want at least the backoff of %s: %v", i+1, gap, i, want, recs)
		}
	}
}

// faultNeverPhase checks that the watch never saw image in phase on the node.
func (e *faultEnv) faultNeverPhase(t *testing.T, w *framework.NodeImageWatch, phase appsv1beta1.ImagePullPhase) {
	t.Helper()
	if _, ok := w.Find(e.node, func(o framework.TagObservation) bool {
		return o.Status != nil && o.Status.Phase == phase
	}); ok {
		t.Errorf("NodeImage %s reported %s at some point: %s", e.node, phase, w.Summary(e.node))
	}
}

// The first two GETs of each blob answer 503: the daemon retries with backoff and the job
// succeeds; the runtime saw failed attempts, then exactly one that worked, and has the image.
func TestPullFaultRetries5xxThenSucceeds(t *testing.T) {
	ctx := framework.Context(t, 5*time.Minute)
	e := faultNewEnv(ctx, t, "fault-5xx")
	image := e.faultFreshImage(ctx, t, "flaky/2/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()

	// Each attempt GETs each blob at most once, and fails if one of them answers 503: the config
	// blob alone makes the first two attempts fail, and the four 503s of the two blobs make at
	// most four fail. backoffLimit 5 leaves room for a sixth attempt.
	job := e.faultRunJob(ctx, t, "flaky", image, 5)
	e.faultRequireSucceeded(ctx, t, job)

	recs := faultRecords(ctx, t, image, since, 0)
	failed, ok := recs[:len(recs)-1], recs[len(recs)-1]
	if ok.Code != "OK" {
		t.Fatalf("the last PullImage call did not succeed: %v", recs)
	}
	if len(failed) < 2 || len(failed) > 2*faultBlobs {
		t.Errorf("%d failed PullImage calls before the one that worked, want 2 to %d: %v", len(failed), 2*faultBlobs, recs)
	}
	for _, r := range failed {
		if r.Code == "OK" || !strings.Contains(r.Error, "503 Service Unavailable") {
			t.Errorf("want every attempt before the last to fail with the registry's 503; got %s", r)
		}
	}
	t.Logf("%d PullImage calls failed with 503 before the one that worked", len(failed))
	faultCheckBackoff(t, recs)
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "injected 503"); lines != nil && len(lines) != 2*faultBlobs {
		t.Errorf("the registry injected %d 503s for the image, want 2 per blob (%d):\n%s", len(lines), 2*faultBlobs, strings.Join(lines, "\n"))
	}

	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseSucceeded)
	if st.ImageID != ok.ImageRef {
		t.Errorf("NodeImage reports image ID %s, the successful PullImage call returned %s", st.ImageID, ok.ImageRef)
	}
	e.faultNeverPhase(t, w, appsv1beta1.ImagePhaseFailed)
	if _, seen := w.Find(e.node, func(o framework.TagObservation) bool {
		return o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhasePulling && strings.Contains(o.Status.Message, "retrying in")
	}); !seen {
		t.Logf("no retry message observed in the NodeImage (status writes may have coalesced): %s", w.Summary(e.node))
	}
	e.faultRequirePresent(ctx, t, image, st.ImageID)
}

// Every GET of a blob answers 500: the job fails after exactly backoffLimit+1 attempts, with a
// message that names the registry's answer, and Succeeded is never reported.
func TestPullFaultAlways500FailsClearly(t *testing.T) {
	ctx := framework.Context(t, 5*time.Minute)
	e := faultNewEnv(ctx, t, "fault-500")
	image := e.faultFreshImage(ctx, t, "broken/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()

	const backoffLimit = 2
	job := e.faultRunJob(ctx, t, "broken", image, backoffLimit)
	if s := job.Status; s.Desired != 1 || s.Succeeded != 0 || s.Failed != 1 || !slices.Equal(s.FailedNodes, []string{e.node}) {
		t.Fatalf("want a finished job with failed=1 failedNodes=[%s]; got %s", e.node, framework.DescribeImagePullJob(ctx, e.c, job))
	}

	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseFailed)
	t.Logf("NodeImage status message: %s", st.Message)
	wantAttempts := fmt.Sprintf("after %d attempts", backoffLimit+1)
	for _, want := range []string{wantAttempts, cri.PullReasonFailed, "500 Internal Server Error"} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("the Failed status message does not say %q: %q", want, st.Message)
		}
	}
	e.faultNeverPhase(t, w, appsv1beta1.ImagePhaseSucceeded)

	recs := faultRecords(ctx, t, image, since, backoffLimit+1)
	for _, r := range recs {
		if r.Code == "OK" || !strings.Contains(r.Error, "500 Internal Server Error") {
			t.Errorf("want every attempt to fail with the registry's 500; got %s", r)
		}
	}
	faultCheckBackoff(t, recs)
	if _, present, err := e.rt.ImageStatus(ctx, image); err != nil || present {
		t.Errorf("image %s: present=%t err=%v, want it absent", image, present, err)
	}
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "injected 500"); lines != nil && len(lines) < backoffLimit+1 {
		t.Errorf("the registry injected %d 500s for the image, want at least one per attempt:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// Nothing more after the failure was reported: read the records once more, last.
	if recs := framework.PullRecordsFor(t, image, since); len(recs) != backoffLimit+1 {
		t.Errorf("%d PullImage calls, want exactly backoffLimit+1 = %d: %v", len(recs), backoffLimit+1, recs)
	}
}

// The first GET of each blob is cut off in the middle of the body: the pull is retried (by the
// runtime or by the daemon) and succeeds.
func TestPullFaultDroppedConnectionRetried(t *testing.T) {
	ctx := framework.Context(t, 5*time.Minute)
	e := faultNewEnv(ctx, t, "fault-drop")
	image := e.faultFreshImage(ctx, t, "drop/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()

	job := e.faultRunJob(ctx, t, "drop", image, 3)
	e.faultRequireSucceeded(ctx, t, job)

	recs := faultRecords(ctx, t, image, since, 0)
	failed, ok := recs[:len(recs)-1], recs[len(recs)-1]
	if ok.Code != "OK" || len(failed) > faultBlobs {
		t.Fatalf("want at most %d failed PullImage calls, then one that worked; got %v", faultBlobs, recs)
	}
	for _, r := range failed {
		if r.Code == "OK" {
			t.Errorf("two PullImage calls succeeded: %v", recs)
		}
	}
	t.Logf("%d PullImage calls failed before the one that worked: %v", len(failed), recs)
	faultCheckBackoff(t, recs)
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "injected drop"); lines != nil && len(lines) != faultBlobs {
		t.Errorf("the registry cut %d GETs of the image, want one per blob (%d):\n%s", len(lines), faultBlobs, strings.Join(lines, "\n"))
	}

	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseSucceeded)
	if st.ImageID != ok.ImageRef {
		t.Errorf("NodeImage reports image ID %s, the successful PullImage call returned %s", st.ImageID, ok.ImageRef)
	}
	e.faultNeverPhase(t, w, appsv1beta1.ImagePhaseFailed)
	e.faultRequirePresent(ctx, t, image, st.ImageID)
}

// faultDaemonPod returns the kruise-daemon pod of node that is not being deleted, and how it looks.
func faultDaemonPod(ctx context.Context, f *framework.Framework, node string) (*corev1.Pod, string, error) {
	p, err := f.DaemonPodOn(ctx, node)
	if err != nil || p == nil {
		return nil, "no kruise-daemon pod on node " + node, err
	}
	return p, faultDescribeDaemon(p), nil
}

func faultDescribeDaemon(p *corev1.Pod) string {
	s := fmt.Sprintf("%s ready=%t", p.Name, framework.PodReady(p))
	if st := framework.ContainerStatusOf(p, faultDaemonContainer); st != nil {
		s += fmt.Sprintf(" restarts=%d containerID=%s", st.RestartCount, st.ContainerID)
	}
	return s
}

// faultWaitDaemonReady waits until the node's daemon pod is Ready and returns it.
func faultWaitDaemonReady(ctx context.Context, t *testing.T, f *framework.Framework, node string, timeout time.Duration, desc string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(ctx, t, timeout, "the kruise-daemon of node "+node+" Ready "+desc, func(ctx context.Context) (bool, string, error) {
		p, observed, err := faultDaemonPod(ctx, f, node)
		got = p
		return p != nil && framework.PodReady(p), observed, err
	})
	return got
}

// faultSucceededCheck remembers when the watch first saw the tag Succeeded on the node and
// whether the runtime had the image at that moment.
type faultSucceededCheck struct {
	mu      sync.Mutex
	at      time.Time
	present bool
	err     error
}

// faultCheckFirstSucceeded makes w note when it first sees image Succeeded on the node, and asks
// the runtime at once whether it has the image.
func (e *faultEnv) faultCheckFirstSucceeded(w *framework.NodeImageWatch, image string) *faultSucceededCheck {
	repo, tag := framework.SplitImage(image)
	var succeeded faultSucceededCheck
	w.CheckEachEvent(func(latest map[string]*appsv1beta1.NodeImage) string {
		ni := latest[e.node]
		if ni == nil {
			return ""
		}
		st := framework.TagStatusesOf(ni, repo, tag)
		if len(st) == 0 || st[len(st)-1].Phase != appsv1beta1.ImagePhaseSucceeded {
			return ""
		}
		succeeded.mu.Lock()
		defer succeeded.mu.Unlock()
		if !succeeded.at.IsZero() {
			return ""
		}
		succeeded.at = time.Now()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, succeeded.present, succeeded.err = e.rt.ImageStatus(cctx, image)
		return ""
	})
	return &succeeded
}

// require checks that Succeeded was seen, after the successful PullImage call ok arrived at the
// runtime, and that the runtime had the image at that moment.
func (s *faultSucceededCheck) require(t *testing.T, w *framework.NodeImageWatch, node string, ok framework.PullRecord) {
	t.Helper()
	s.mu.Lock()
	at, present, perr := s.at, s.present, s.err
	s.mu.Unlock()
	switch {
	case at.IsZero():
		t.Errorf("the watch never saw Succeeded: %s", w.Summary(node))
	case !at.After(ok.Time):
		t.Errorf("Succeeded first seen at %s, before the successful PullImage call arrived at %s", at.Format(time.RFC3339Nano), ok.Time.Format(time.RFC3339Nano))
	case perr != nil || !present:
		t.Errorf("when Succeeded was first seen (%s) the runtime did not have the image (present=%t, err=%v)", at.Format(time.RFC3339Nano), present, perr)
	}
}

// Kill the daemon's container (SIGKILL) while its pull is in flight: the registry holds the
// first GET of each blob under stall/ until the client goes away, so the pull stays under way.
// After the kubelet restarts the daemon, the new one pulls the tag again (the next GETs are
// served) and reports Succeeded, with the image really in the runtime, never before the image
// existed, and the tag is not left in Pulling.
func TestPullFaultDaemonKilledMidPull(t *testing.T) {
	ctx := framework.Context(t, 14*time.Minute)
	e := faultNewEnv(ctx, t, "fault-kill")
	before := e.faultDaemonReadyAround(ctx, t)
	image := e.faultFreshImage(ctx, t, "stall/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	succeeded := e.faultCheckFirstSucceeded(w, image)
	since := time.Now()

	// No per-attempt timeout or deadline may cut in while the daemon is down and restarting.
	e.faultStartHeldPull(ctx, t, w, "killed", image)
	if recs := framework.PullRecordsFor(t, image, since); len(recs) != 0 {
		t.Fatalf("the pull ended before the kill: %v", recs)
	}

	daemon, _, err := faultDaemonPod(ctx, e.f, e.node)
	if err != nil || daemon == nil {
		t.Fatalf("finding the daemon pod of node %s: %v", e.node, err)
	}
	if daemon.UID != before.UID {
		t.Fatalf("the daemon pod changed during the test: %s, then %s", before.Name, daemon.Name)
	}
	killedAt := time.Now()
	oldID := framework.KillContainer(ctx, t, daemon, faultDaemonContainer)
	t.Logf("killed the daemon's container %s (pod %s) mid-pull", oldID, daemon.Name)

	// The killed daemon's call ends (its client went away) without success.
	killed := framework.WaitPullRecord(ctx, t, image, since, time.Minute, "the killed daemon's call ended", func(framework.PullRecord) bool { return true })
	if killed.Code == "OK" {
		t.Fatalf("the killed daemon's PullImage call succeeded: %s", killed)
	}
	t.Logf("the killed daemon's PullImage call ended: %s", killed)
	restarted := e.f.WaitContainerRestarted(ctx, t, framework.KruiseNamespace, daemon.Name, faultDaemonContainer, oldID, faultRestartTimeout)
	t.Logf("daemon ready again %s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), faultDescribeDaemon(restarted))

	done := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, "killed", faultJobTimeout)
	t.Logf("job finished %s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), done.Status.Message)
	e.faultRequireSucceeded(ctx, t, done)

	ok := faultOneOKPullAfter(ctx, t, image, since, killedAt, "the kill")
	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseSucceeded)
	if st.ImageID != ok.ImageRef {
		t.Errorf("NodeImage reports image ID %s, the successful PullImage call returned %s", st.ImageID, ok.ImageRef)
	}
	succeeded.require(t, w, e.node, ok)
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "gone while held"); lines != nil && len(lines) == 0 {
		t.Errorf("the registry never saw the killed pull's client go away")
	}
	e.faultRequirePresent(ctx, t, image, st.ImageID)
}

// faultOneOKPullAfter requires exactly one successful PullImage call of image since since, made
// after the fault at faultAt (no pull repeated, none from before the fault), and returns it.
func faultOneOKPullAfter(ctx context.Context, t *testing.T, image string, since, faultAt time.Time, fault string) framework.PullRecord {
	t.Helper()
	recs := faultRecords(ctx, t, image, since, 0)
	var oks []framework.PullRecord
	for _, r := range recs {
		if r.Code == "OK" {
			oks = append(oks, r)
		}
	}
	if len(oks) != 1 || !oks[0].Time.After(faultAt) {
		t.Fatalf("want exactly one successful PullImage call, made after %s at %s; got %v", fault, faultAt.Format(time.RFC3339Nano), recs)
	}
	return oks[0]
}

// faultStartHeldPull creates an ImagePullJob of image (a stall/ repository) with backoffLimit 1
// and no timeout or deadline short enough to cut in during a fault, and returns once the
// daemon's PullImage has reached the registry, which holds its blob GET (Pulling is written
// just before the call).
func (e *faultEnv) faultStartHeldPull(ctx context.Context, t *testing.T, w *framework.NodeImageWatch, name, image string) {
	t.Helper()
	job := framework.NewImagePullJob(e.ns, name, image)
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](1)}
	job.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](900)
	framework.CreateImagePullJob(ctx, t, e.c, job)
	w.WaitObservation(ctx, t, e.node, time.Minute, "tag Pulling", func(o framework.TagObservation) bool {
		return o.Spec != nil && o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhasePulling && o.Status.Version == o.Spec.Version
	})
	framework.WaitFor(ctx, t, time.Minute, "the registry holding a blob GET of "+image, func(context.Context) (bool, string, error) {
		held := framework.RegistryLogLines(t, e.faultRepoPath(image), "registry request held")
		return len(held) > 0, fmt.Sprintf("%d held GETs in %s", len(held), framework.RegistryLog), nil
	})
}

// faultRunJob creates the ImagePullJob e.faultJob(name, image, backoffLimit) and waits until it
// has finished.
func (e *faultEnv) faultRunJob(ctx context.Context, t *testing.T, name, image string, backoffLimit int32) *appsv1beta1.ImagePullJob {
	t.Helper()
	start := time.Now()
	framework.CreateImagePullJob(ctx, t, e.c, e.faultJob(name, image, backoffLimit))
	job := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, name, faultJobTimeout)
	t.Logf("job finished after %s: %s", time.Since(start).Round(time.Millisecond), job.Status.Message)
	return job
}

// faultDaemonReadyAround waits until the node's daemon is Ready and returns its pod; when the
// test ends it waits for it to be Ready again, so a test that killed it leaves it serving.
func (e *faultEnv) faultDaemonReadyAround(ctx context.Context, t *testing.T) *corev1.Pod {
	t.Helper()
	pod := faultWaitDaemonReady(ctx, t, e.f, e.node, faultRestartTimeout, "before the test")
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), faultRestartTimeout+time.Minute)
		defer cancel()
		faultWaitDaemonReady(cctx, t, e.f, e.node, faultRestartTimeout, "after the test")
	})
	return pod
}
