package crr

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// drain empties the queue and returns what it held.
func drain(f *fixture) []string {
	var keys []string
	for f.ctrl.queue.Len() > 0 {
		k, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(k)
		f.ctrl.queue.Forget(k)
		keys = append(keys, k)
	}
	return keys
}

func TestEventHandlersUseIndexes(t *testing.T) {
	onOtherPod := gen.CRRFrom(admittedCRR(time.Minute), gen.SetCRRName("other-pod"))
	onOtherPod.Spec.PodName = "db"
	onOtherNode := gen.CRRFrom(admittedCRR(time.Minute), gen.SetCRRName("other-node"))
	onOtherNode.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey] = "node-b"
	crrs := []*appsv1alpha1.ContainerRecreateRequest{
		gen.CRRFrom(admittedCRR(time.Minute), gen.SetCRRName("active")),
		gen.CRRFrom(newCRR(time.Second, "main"), gen.SetCRRName("new")),
		gen.CRRFrom(completedCRR(time.Second), gen.SetCRRName("done")),
		onOtherPod, onOtherNode,
	}
	f := newFixture(t, objects{crrs: crrs})
	drain(f)

	pod := runningPod()
	f.ctrl.podChanged(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: pod})
	assert.ElementsMatch(t, []string{"default/active", "default/new", "default/other-node"}, drain(f), "pod deleted")

	f.ctrl.podUpdated(pod, runningPod(func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady}} }))
	assert.Empty(t, drain(f), "status churn concerns no CRR")
	f.ctrl.podUpdated(pod, runningPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }))
	assert.ElementsMatch(t, []string{"default/active", "default/new", "default/other-node"}, drain(f), "pod stopped running")

	f.ctrl.leaseChanged(lease(nodeName, 0))
	assert.ElementsMatch(t, []string{"default/active", "default/other-pod"}, drain(f), "heartbeat of node-a")
	other := lease(nodeName, 0)
	other.Name = "kube-controller-manager"
	f.ctrl.leaseChanged(other)
	assert.Empty(t, drain(f), "not a daemon heartbeat")
}

func TestWorkerRequeues(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)

	t.Run("conflict is retried with rate limiting", func(t *testing.T) {
		f := newFixture(t, objects{crrs: []*appsv1alpha1.ContainerRecreateRequest{admittedCRR(time.Minute)}})
		f.kruise.PrependReactor("update", "containerrecreaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "containerrecreaterequests"}, crrName, errors.New("stale"))
		})
		drain(f)
		f.ctrl.queue.Add(fixtureKey)
		require.True(t, f.ctrl.processNextWorkItem(ctx))
		assert.Equal(t, 1, f.ctrl.queue.NumRequeues(fixtureKey))
	})

	t.Run("a deadline is waited for on the clock, not polled", func(t *testing.T) {
		f := newFixture(t, objects{pods: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{admittedCRR(20 * time.Second)}})
		drain(f)
		f.ctrl.queue.Add(fixtureKey)
		require.True(t, f.ctrl.processNextWorkItem(ctx))
		assert.Zero(t, f.ctrl.queue.NumRequeues(fixtureKey))
		assert.Zero(t, f.ctrl.queue.Len(), "nothing due before the grace ends")
		// The delaying queue waits on the fake clock for the remaining 20 s.
		require.Eventually(t, f.clock.HasWaiters, 5*time.Second, time.Millisecond)
		f.clock.Step(20*time.Second - time.Millisecond)
		assert.Zero(t, f.ctrl.queue.Len())
		f.clock.Step(time.Millisecond)
		require.Eventually(t, func() bool { return f.ctrl.queue.Len() == 1 }, 5*time.Second, time.Millisecond)
	})
}
