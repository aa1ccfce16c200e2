package podunavailablebudget

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestReadChanged(t *testing.T) {
	base := readyPod("a")
	for name, tc := range map[string]struct {
		mod  gen.PodModifier
		want bool
	}{
		"an annotation (ours)":    {mod: gen.AddPodAnnotations(map[string]string{policyv1alpha1.PodRelatedPubAnnotation: "x"})},
		"a container status":      {mod: gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", RestartCount: 3})},
		"not ready":               {mod: gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}), want: true},
		"phase":                   {mod: gen.SetPodPhase(corev1.PodSucceeded), want: true},
		"a label":                 {mod: gen.AddPodLabels(map[string]string{"x": "y"}), want: true},
		"deleting":                {mod: gen.SetPodDeletionTimestamp(now), want: true},
		"in-place update started": {mod: gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}), want: true},
		"owner":                   {mod: gen.SetPodOwnerReferences(), want: true},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, readChanged(base, gen.PodFrom(base, tc.mod)))
		})
	}
}

func TestHandlersQueueTheCoveringBudgets(t *testing.T) {
	bySelector := gen.PUB("by-label", gen.SetPUBNamespace(ns), gen.SetPUBSelector(map[string]string{"app": "web"}), gen.SetPUBMaxUnavailable("1"))
	other := gen.PUB("other", gen.SetPUBNamespace(ns), gen.SetPUBTarget("apps/v1", "Deployment", "api"), gen.SetPUBMaxUnavailable("1"))
	f := newFixture(t, objects{
		budgets: []*policyv1alpha1.PodUnavailableBudget{budget(), bySelector, other},
		kube:    []runtime.Object{deployment(2), replicaSet(2)},
	})
	queued := func() []string {
		var out []string
		for f.ctrl.queue.Len() > 0 {
			k, _ := f.ctrl.queue.Get()
			f.ctrl.queue.Done(k)
			out = append(out, k)
		}
		return out
	}
	// A new pod, unannotated, queues the budgets that cover it (#1857).
	pod := readyPod("a")
	f.ctrl.podChanged(nil, pod)
	assert.ElementsMatch(t, []string{"default/web-pub", "default/by-label"}, queued())
	// A change no budget reads queues nothing.
	f.ctrl.podChanged(pod, gen.PodFrom(pod, gen.AddPodAnnotations(map[string]string{policyv1alpha1.PodRelatedPubAnnotation: "web-pub"})))
	assert.Empty(t, queued())
	// Relabelled out of the selector: the budget it left is told too.
	f.ctrl.podChanged(pod, gen.PodFrom(pod, gen.AddPodLabels(map[string]string{"app": "db"})))
	assert.ElementsMatch(t, []string{"default/web-pub", "default/by-label"}, queued())

	// Replicas of the target: its budget and the selector budgets.
	f.ctrl.enqueueForWorkload(deployment(3))
	assert.ElementsMatch(t, []string{"default/web-pub", "default/by-label"}, queued())
}

func TestWorkloadChanged(t *testing.T) {
	base := deployment(3)
	status := deployment(3)
	status.Status.ReadyReplicas = 2
	assert.False(t, workloadChanged(base, status), "a status update")
	assert.True(t, workloadChanged(base, deployment(4)), "scaled")
	deleting := deployment(3)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	assert.True(t, workloadChanged(base, deleting), "deleted")
}
