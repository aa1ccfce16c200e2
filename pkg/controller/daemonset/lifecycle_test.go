package daemonset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestPreDeleteHookHoldsThePod(t *testing.T) {
	hooked := func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	}
	old := daemonSet("agent:1", hooked)
	oldRev := revisionOf(t, old, 1)
	ds := daemonSet("agent:2", hooked)
	pod := runningPod(t, old, oldRev, "a")
	pod.Labels["hold"] = "true"

	f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, pod)
	f.sync()
	assert.Equal(t, []string{"patch agent-a"}, f.writes(), "state PreparingDelete, no delete")
	got, _ := f.kube.CoreV1().Pods(testNS).Get(context.Background(), "agent-a", metav1.GetOptions{})
	assert.Equal(t, string(pub.LifecycleStatePreparingDelete), got.Labels[pub.LifecycleStateKey])

	held := got.DeepCopy()
	f = newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, held)
	f.sync()
	assert.Empty(t, f.writes(), "the hook still holds it")

	released := held.DeepCopy()
	delete(released.Labels, "hold")
	f = newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, released)
	f.sync()
	assert.Equal(t, []string{"delete agent-a"}, f.writes())
}

// A DaemonSet taken over from OpenKruise (or the built-in controller) keeps its pods: the
// revision they were made from records the same template, and its controller-revision-hash
// label, which the pods carry, is the other controller's (here as OpenKruise labels a revision
// that had none: with its whole name).
func TestTakeOverKeepsThePods(t *testing.T) {
	ds := daemonSet("agent:1")
	data, err := revision.PatchData(ds.Spec.Template, revision.TemplatePath...)
	require.NoError(t, err)
	theirs := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-legacy", Namespace: testNS,
			Labels:          map[string]string{"app": "agent", appsv1.ControllerRevisionHashLabelKey: "agent-legacy"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: 1,
	}
	pod := runningPod(t, ds, theirs, "a")
	require.Equal(t, "agent-legacy", pod.Labels[appsv1.ControllerRevisionHashLabelKey])
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{theirs}, pod)
	f.sync()
	assert.Empty(t, f.writes(), "no pod recreated")
	revs, _ := f.kube.AppsV1().ControllerRevisions(testNS).List(context.Background(), metav1.ListOptions{})
	assert.Len(t, revs.Items, 1, "their revision is ours")
	st := f.status()
	assert.Equal(t, "agent-legacy", st.UpdateRevision)
	assert.Equal(t, int32(1), st.UpdatedNumberScheduled)
}

// markPodNotReady: new pods declare the KruisePodReady gate, and a pod taken into
// PreparingDelete is marked not ready (its status first) before its state is written.
func TestPreDeleteMarkPodNotReady(t *testing.T) {
	hooked := func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	}
	f := newFixture(t, daemonSet("agent:1", hooked), []*corev1.Node{gen.Node("a")}, nil)
	f.sync()
	pods, _ := f.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	require.Len(t, pods.Items, 1)
	assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReady}}, pods.Items[0].Spec.ReadinessGates)

	old := daemonSet("agent:1", hooked)
	oldRev := revisionOf(t, old, 1)
	pod := runningPod(t, old, oldRev, "a")
	pod.Labels["hold"] = "true"
	f = newFixture(t, daemonSet("agent:2", hooked), []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, pod)
	f.sync()
	assert.Equal(t, []string{"patch/status agent-a", "patch agent-a"}, f.writes())
	got, _ := f.kube.CoreV1().Pods(testNS).Get(context.Background(), "agent-a", metav1.GetOptions{})
	var cond *corev1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == pub.KruisePodReady {
			cond = &got.Status.Conditions[i]
		}
	}
	require.NotNil(t, cond)
	assert.Equal(t, corev1.ConditionFalse, cond.Status)
}
