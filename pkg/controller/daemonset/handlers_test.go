package daemonset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func (f *fixture) queued() []string {
	var out []string
	for f.ctrl.queue.Len() > 0 {
		k, _ := f.ctrl.queue.Get()
		out = append(out, k)
		f.ctrl.queue.Done(k)
	}
	return out
}

func TestNodeEventsQueueTheDaemonSetsTheyMatter(t *testing.T) {
	ds := daemonSet("agent:1")
	f := newFixture(t, ds, nil, nil)
	base := gen.Node("a", gen.SetNodeResourceVersion("1"))
	tests := []struct {
		name string
		cur  *corev1.Node
		want []string
	}{
		{"heartbeat: nothing", gen.NodeFrom(base, gen.SetNodeResourceVersion("2"), gen.SetNodeCondition(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})), nil},
		{"a NoExecute taint: eligibility changed", func() *corev1.Node {
			n := gen.NodeFrom(base, gen.SetNodeResourceVersion("2"))
			n.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoExecute}}
			return n
		}(), []string{"default/agent"}},
		{"a label: an update selector may match now", gen.NodeFrom(base, gen.SetNodeResourceVersion("2"), gen.AddNodeLabel("canary", "true")), []string{"default/agent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.ctrl.nodeUpdated(base, tt.cur)
			assert.Equal(t, tt.want, f.queued())
		})
	}
	f.ctrl.nodeAdded(gen.Node("b"))
	assert.Equal(t, []string{"default/agent"}, f.queued(), "a new eligible node")
}

func TestPodEventsMeetExpectations(t *testing.T) {
	ds := daemonSet("agent:1")
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, nil)
	f.sync()
	assert.Len(t, f.writes(), 1)
	key := testNS + "/agent"
	ok, _ := f.ctrl.expect.Satisfied(t.Context(), key)
	assert.False(t, ok, "the creation is expected")

	pods, _ := f.kube.CoreV1().Pods(testNS).List(t.Context(), metav1.ListOptions{})
	created := pods.Items[0].DeepCopy()
	created.OwnerReferences[0].APIVersion = "apps.kruise.io/v1alpha1" // made through v1alpha1: still ours
	f.ctrl.podEvents.Handler().OnAdd(created, false)
	ok, _ = f.ctrl.expect.Satisfied(t.Context(), key)
	assert.True(t, ok, "seen by the informer")
	assert.Equal(t, []string{key}, f.queued())
}

func TestFailedPodIsDeletedWithBackoff(t *testing.T) {
	ds := daemonSet("agent:1")
	rev := revisionOf(t, ds, 1)
	failed := runningPod(t, ds, rev, "a")
	failed.Status.Phase = corev1.PodFailed
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{rev}, failed)
	f.sync()
	assert.Equal(t, []string{"delete agent-a"}, f.writes())

	// The kubelet rejects the replacement at once: the next failed pod waits out the backoff.
	f.ctrl.expect.Forget(testNS + "/agent")
	again := failed.DeepCopy()
	again.Name, again.UID = "agent-a-2", "uid-2"
	f.ctrl.podIndex.Delete(failed)
	assert.NoError(t, f.ctrl.podIndex.Add(again))
	f.kube.ClearActions()
	after := f.sync()
	assert.Empty(t, f.writes(), "in backoff")
	assert.Greater(t, after, time.Duration(0), "looked at again when the backoff ends")

	f.ctrl.clock.(*clocktesting.FakeClock).Step(time.Minute)
	f.sync()
	assert.Equal(t, []string{"delete agent-a-2"}, f.writes())
}

func TestPartitionedScalingCreatesWithinThePartition(t *testing.T) {
	ds := daemonSet("agent:1", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.ScaleStrategy = &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	})
	f := newFixture(t, ds, []*corev1.Node{gen.Node("c"), gen.Node("a"), gen.Node("b")}, nil)
	f.sync()
	assert.Equal(t, []string{"create a"}, f.writes(), "3 desired − partition 2: one node, the first by name")
}
