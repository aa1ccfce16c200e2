package inplace

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// fixture is an Updater on a fake clientset holding pod, at time t0.
type fixture struct {
	client  *fake.Clientset
	clock   *clocktesting.FakePassiveClock
	updater *Updater
}

func newFixture(pod *corev1.Pod) *fixture {
	client := fake.NewClientset(pod)
	clk := clocktesting.NewFakePassiveClock(t0)
	// No sleep between retries.
	return &fixture{client: client, clock: clk, updater: NewUpdaterFor(NewPodClient(client), clk, wait.Backoff{Steps: 3})}
}

func (f *fixture) pod(t *testing.T) *corev1.Pod {
	t.Helper()
	p, err := f.client.CoreV1().Pods("ns").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// writes lists the writes made, as "verb subresource".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" {
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetSubresource())
	}
	return out
}

// failFirst makes the first n calls of verb on pods (with subresource sub) fail with err.
func (f *fixture) failFirst(verb, sub string, n int, err error) *int {
	calls := 0
	f.client.PrependReactor(verb, "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != sub {
			return false, nil, nil
		}
		calls++
		if calls <= n {
			return true, nil, err
		}
		return false, nil, nil
	})
	return &calls
}

var podsResource = schema.GroupResource{Resource: "pods"}

func conflict() error { return apierrors.NewConflict(podsResource, "web", errors.New("changed")) }

func gated(mods ...gen.PodModifier) *corev1.Pod {
	return runningPod(append([]gen.PodModifier{gen.AddPodReadinessGate(pub.InPlaceUpdateReady),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})}, mods...)...)
}

func TestUpdateMarksNotReadyThenUpdates(t *testing.T) {
	f := newFixture(gated())
	r := f.updater.Update(context.Background(), gated(), imagesOf("app"), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeStarted, r.Outcome)
	assert.Equal(t, []string{"app"}, r.Containers)
	assert.Equal(t, []string{"patch status", "update "}, f.writes())
	for _, a := range f.client.Actions() {
		assert.NotEqual(t, "get", a.GetVerb(), "the copy given and the status patch's result are current: no read")
	}

	got := f.pod(t)
	assert.Equal(t, "app:2", got.Spec.Containers[0].Image)
	assert.Equal(t, "r2", got.Labels["controller-revision-hash"])
	assert.Equal(t, corev1.ConditionFalse, Condition(got).Status)
	assert.Equal(t, ReasonStartInPlaceUpdate, Condition(got).Reason)
	assert.Equal(t, corev1.ConditionFalse, podCondition(got, corev1.PodReady).Status)
	state, err := ReadState(got)
	require.NoError(t, err)
	assert.Equal(t, "web-r2", state.Revision)
}

// A conflict on either write re-reads the pod and decides again on what it read.
func TestUpdateRetriesOnConflict(t *testing.T) {
	f := newFixture(gated())
	calls := f.failFirst("update", "", 1, conflict())
	statusCalls := f.failFirst("patch", "status", 1, conflict())
	r := f.updater.Update(context.Background(), gated(), imagesOf("app"), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, 2, *calls)
	assert.Equal(t, 2, *statusCalls)
	gets := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	assert.Equal(t, 2, gets, "only a retry after a conflict reads the pod")
	assert.Equal(t, "app:2", f.pod(t).Spec.Containers[0].Image)
}

func TestUpdateGivesUpOnOtherErrors(t *testing.T) {
	f := newFixture(runningPod())
	calls := f.failFirst("update", "", 5, apierrors.NewForbidden(podsResource, "web", errors.New("denied")))
	r := f.updater.Update(context.Background(), runningPod(), imagesOf("app"), target, 0)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "updating pod ns/web in place")
	assert.Equal(t, 1, *calls)
	assert.Equal(t, OutcomeNothing, r.Outcome)
}

// Without the readiness gate, the condition is not touched; a resize-only change that restarts
// nothing does not take a gated pod out of its Services either.
func TestUpdateLeavesReadinessAlone(t *testing.T) {
	f := newFixture(runningPod())
	require.NoError(t, f.updater.Update(context.Background(), runningPod(), imagesOf("app"), target, 0).Err)
	assert.Equal(t, []string{"update "}, f.writes())

	resizeOnly := specWith(func(s *Spec) {
		s.ContainerResources["app"] = corev1.ResourceRequirements{Requests: res("2", ""), Limits: res("3", "")}
	})
	f = newFixture(gated())
	require.NoError(t, f.updater.Update(context.Background(), gated(), resizeOnly, target, 0).Err)
	assert.Equal(t, []string{"patch resize", "update "}, f.writes())

	restarting := gated(func(p *corev1.Pod) {
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	})
	f = newFixture(restarting)
	require.NoError(t, f.updater.Update(context.Background(), restarting, resizeOnly, target, 0).Err)
	assert.Equal(t, []string{"patch status", "patch resize", "update "}, f.writes())
}

// The resize goes through pods/resize before the update, and the update carries the resized
// resources.
func TestUpdateResizes(t *testing.T) {
	f := newFixture(runningPod())
	r := f.updater.Update(context.Background(), runningPod(), twoBatchSpec(), target, 0)
	require.NoError(t, r.Err)
	assert.Equal(t, []string{"patch resize", "update "}, f.writes())
	resize := f.client.Actions()[0].(k8stesting.PatchAction)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"7"},"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"3"},"requests":{"cpu":"2"}}}]}}`,
		string(resize.GetPatch()))
	updated := f.client.Actions()[1].(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
	assert.Equal(t, res("2", ""), updated.Spec.Containers[0].Resources.Requests)
	assert.Equal(t, res("3", ""), updated.Spec.Containers[0].Resources.Limits)

	// A failed resize writes nothing else.
	f = newFixture(runningPod())
	f.failFirst("patch", "resize", 5, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web", nil))
	r = f.updater.Update(context.Background(), runningPod(), twoBatchSpec(), target, 0)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "resizing containers [app] of pod ns/web")
	assert.Equal(t, []string{"patch resize"}, f.writes())
	assert.Equal(t, "app:1", f.pod(t).Spec.Containers[0].Image)
}

// A whole update with a grace period and two batches, driven by Refresh.
func TestRefreshDrivesTheUpdate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(gated())
	r := f.updater.Update(ctx, gated(), imagesOf("app", "log"), target, 30)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeGraceStarted, r.Outcome)
	assert.Equal(t, 30*time.Second, r.RequeueAfter)
	assert.Equal(t, "app:1", f.pod(t).Spec.Containers[0].Image)

	f.clock.SetTime(t0.Add(10 * time.Second))
	r = f.updater.Refresh(ctx, f.pod(t))
	require.NoError(t, r.Err)
	assert.Equal(t, Result{Outcome: OutcomeWaiting, Waiting: "grace period", RequeueAfter: 20 * time.Second}, r)

	f.clock.SetTime(t0.Add(30 * time.Second))
	r = f.updater.Refresh(ctx, f.pod(t))
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeGraceFinished, r.Outcome)
	assert.Equal(t, []string{"app"}, r.Containers)
	assert.Equal(t, "app:2", f.pod(t).Spec.Containers[0].Image)

	r = f.updater.Refresh(ctx, f.pod(t))
	assert.Equal(t, Result{Outcome: OutcomeWaiting, Waiting: "container app has not been restarted yet"}, r)

	setStatus(t, f, corev1.ContainerStatus{Name: "app", ImageID: "sha-app2", ContainerID: "cri://app-2", Ready: true})
	r = f.updater.Refresh(ctx, f.pod(t))
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeNextBatch, r.Outcome)
	assert.Equal(t, []string{"log"}, r.Containers)
	assert.Equal(t, "log:2", f.pod(t).Spec.Containers[1].Image)

	setStatus(t, f, corev1.ContainerStatus{Name: "log", ImageID: "sha-log1", ContainerID: "cri://log-2", Ready: true})
	r = f.updater.Refresh(ctx, f.pod(t))
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeMarkedReady, r.Outcome)
	assert.Equal(t, corev1.ConditionTrue, Condition(f.pod(t)).Status)

	r = f.updater.Refresh(ctx, f.pod(t))
	assert.Equal(t, Result{}, r)
}

// Marking ready holds only for the pod checked: a conflict is returned, not retried.
func TestRefreshDoesNotRetryMarkReady(t *testing.T) {
	pod := runningPod(gen.AddPodReadinessGate(pub.InPlaceUpdateReady))
	f := newFixture(pod)
	calls := f.failFirst("patch", "status", 1, conflict())
	r := f.updater.Refresh(context.Background(), pod)
	require.Error(t, r.Err)
	assert.True(t, apierrors.IsConflict(r.Err))
	assert.Equal(t, 1, *calls)
}

// A pod that moved on between the cache and the API server is decided on again.
func TestRefreshRedecidesOnTheFreshPod(t *testing.T) {
	step, err := Start(runningPod(), imagesOf("app", "log"), target, 0, t0)
	require.NoError(t, err)
	cached := gen.PodFrom(step.Pod, gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", ContainerID: "cri://app-2", Ready: true}))
	f := newFixture(step.Pod) // the server has not seen the restart yet
	r := f.updater.Refresh(context.Background(), cached)
	require.NoError(t, r.Err)
	assert.Equal(t, Result{Outcome: OutcomeWaiting, Waiting: "container app has not been restarted yet"}, r)
	assert.Empty(t, f.writes())
}

func setStatus(t *testing.T, f *fixture, st corev1.ContainerStatus) {
	t.Helper()
	p := gen.PodFrom(f.pod(t), gen.SetPodContainerStatus(st))
	_, err := f.client.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// An image update's gate is released once the kubelet replaces the last batch, and written again
// without its reason once the update is done.
func TestRefreshReleasesTheGateToTheKubelet(t *testing.T) {
	ctx := context.Background()
	pod := gen.PodFrom(imagesLastBatch(t), logStopped(), gen.SetPodGeneration(3, 3), inPlaceReady(corev1.ConditionFalse))
	f := newFixture(pod)
	r := f.updater.Refresh(ctx, pod)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeGateReleased, r.Outcome)
	c := Condition(f.pod(t))
	assert.Equal(t, corev1.ConditionTrue, c.Status)
	assert.Equal(t, pub.InPlaceUpdateRestartingReason, c.Reason)
	assert.Equal(t, "the kubelet is replacing the updated containers (pod generation 3); Ready follows their readiness", c.Message)
	assert.Equal(t, []string{"patch status"}, f.writes())

	r = f.updater.Refresh(ctx, f.pod(t))
	assert.Equal(t, Result{Outcome: OutcomeWaiting, Waiting: "container log has not been restarted yet"}, r)

	setStatus(t, f, corev1.ContainerStatus{Name: "log", ImageID: "sha-log2", ContainerID: "cri://log-2"})
	r = f.updater.Refresh(ctx, f.pod(t))
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeMarkedReady, r.Outcome)
	c = Condition(f.pod(t))
	assert.Equal(t, corev1.ConditionTrue, c.Status)
	assert.Empty(t, c.Reason)
	assert.Empty(t, c.Message)

	r = f.updater.Refresh(ctx, f.pod(t))
	assert.Equal(t, Result{}, r)
}

// A released gate is taken back, once, should the kubelet report the pod Ready on a container
// the update replaces; the update then finishes as without a release.
func TestRefreshHoldsAReleasedGateOnAnOldContainer(t *testing.T) {
	ctx := context.Background()
	pod := gen.PodFrom(imagesLastBatch(t), gen.SetPodGeneration(3, 3), releasedGate(),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	f := newFixture(pod)
	r := f.updater.Refresh(ctx, pod)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeGateHeld, r.Outcome)
	got := f.pod(t)
	assert.Equal(t, corev1.ConditionFalse, Condition(got).Status)
	assert.Equal(t, ReasonOldContainerReady, Condition(got).Reason)
	assert.Equal(t, corev1.ConditionFalse, podCondition(got, corev1.PodReady).Status)

	r = f.updater.Refresh(ctx, got)
	assert.Equal(t, Result{Outcome: OutcomeWaiting, Waiting: "container log has not been restarted yet"}, r)

	setStatus(t, f, corev1.ContainerStatus{Name: "log", ImageID: "sha-log2", ContainerID: "cri://log-2", Ready: true})
	r = f.updater.Refresh(ctx, f.pod(t))
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeMarkedReady, r.Outcome)
	assert.Equal(t, corev1.ConditionTrue, Condition(f.pod(t)).Status)
	assert.Empty(t, Condition(f.pod(t)).Reason)
}

// The kubelet writes back Ready=True before its sync of the update: Ready is set False again
// (the gate as it was), and the gate is released as usual once the kubelet has synced the spec.
func TestRefreshRestatesNotReadyWrittenBack(t *testing.T) {
	ctx := context.Background()
	pod := gen.PodFrom(imagesLastBatch(t), gen.SetPodGeneration(3, 2), inPlaceReady(corev1.ConditionFalse),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	f := newFixture(pod)
	r := f.updater.Refresh(ctx, pod)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeNotReadyRestated, r.Outcome)
	got := f.pod(t)
	assert.Equal(t, corev1.ConditionFalse, Condition(got).Status)
	assert.False(t, held(got), "the gate is not held: it may still be released")
	ready := podCondition(got, corev1.PodReady)
	assert.Equal(t, corev1.ConditionFalse, ready.Status)
	assert.Equal(t, "readiness gate InPlaceUpdateReady is False", ready.Message, "kruise's message, so that the kubelet syncs")

	got.Status.ObservedGeneration = 3
	r = f.updater.Refresh(ctx, got)
	require.NoError(t, r.Err)
	assert.Equal(t, OutcomeGateReleased, r.Outcome)
}

// A pod whose update annotations do not decode is Unreadable, nothing written, the error an
// AnnotationError naming the key; any other failure stays an error of its own.
func TestRefreshReportsUnreadablePods(t *testing.T) {
	pod := runningPod(gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: "{not json"}))
	f := newFixture(pod)
	r := f.updater.Refresh(context.Background(), pod)
	assert.Equal(t, OutcomeUnreadable, r.Outcome)
	ae, ok := AsAnnotationError(r.Err)
	require.True(t, ok, "%v", r.Err)
	assert.Equal(t, pub.InPlaceUpdateStateKey, ae.Key)
	assert.Empty(t, f.writes())
}
