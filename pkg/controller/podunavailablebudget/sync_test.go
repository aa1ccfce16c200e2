package podunavailablebudget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestSyncCountsADeploymentsPods(t *testing.T) {
	f := newFixture(t, objects{
		budgets: []*policyv1alpha1.PodUnavailableBudget{budget()},
		kube:    []runtime.Object{deployment(4), replicaSet(4), readyPod("a"), readyPod("b"), readyPod("c"), readyPod("d", gen.SetPodPhase(corev1.PodPending))},
	})
	after := f.sync(t, "default/web-pub")
	assert.Zero(t, after)
	writes := f.statusWrites()
	require.Len(t, writes, 1)
	assert.Equal(t, policyv1alpha1.PodUnavailableBudgetStatus{ObservedGeneration: 2, TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 3, UnavailableAllowed: 0},
		writes[0].Status)
	patches := f.podPatches()
	assert.Len(t, patches, 4)
	assert.JSONEq(t, `{"metadata":{"uid":"uid-a","annotations":{"kruise.io/related-pub":"web-pub"}}}`, patches["a"])
}

// A second reconcile of a budget whose status is up to date writes nothing (idle).
func TestSyncIsIdleWhenNothingChanged(t *testing.T) {
	annotated := gen.AddPodAnnotations(map[string]string{policyv1alpha1.PodRelatedPubAnnotation: "web-pub"})
	f := newFixture(t, objects{
		budgets: []*policyv1alpha1.PodUnavailableBudget{budget()},
		kube:    []runtime.Object{deployment(2), replicaSet(2), readyPod("a", annotated), readyPod("b", annotated)},
	})
	f.sync(t, "default/web-pub")
	require.Len(t, f.statusWrites(), 1)
	// Let the cache see the write, as the informer would.
	written := f.statusWrites()[0].DeepCopy()
	require.NoError(t, f.budgets.Update(written))
	f.kruise.ClearActions()
	f.kube.ClearActions()

	assert.Zero(t, f.sync(t, "default/web-pub"))
	assert.Empty(t, f.kruise.Actions(), "no API call on the second reconcile")
	assert.Empty(t, f.kube.Actions())
}

// A budget that covers no pod yet still gets its numbers (OpenKruise #1857).
func TestSyncWithoutPods(t *testing.T) {
	sel := gen.PUB("by-label", gen.SetPUBNamespace(ns), gen.SetPUBGeneration(1), gen.SetPUBSelector(map[string]string{"app": "api"}), gen.SetPUBMinAvailable("1"))
	f := newFixture(t, objects{budgets: []*policyv1alpha1.PodUnavailableBudget{sel}})
	f.sync(t, "default/by-label")
	writes := f.statusWrites()
	require.Len(t, writes, 1)
	assert.Equal(t, policyv1alpha1.PodUnavailableBudgetStatus{ObservedGeneration: 1}, writes[0].Status)
}

func TestSyncPrunesAndRequeues(t *testing.T) {
	b := budget(gen.SetPUBStatus(policyv1alpha1.PodUnavailableBudgetStatus{
		ObservedGeneration: 2,
		DisruptedPods: map[string]metav1.Time{
			"a":    metav1.NewTime(now.Add(-25 * time.Second)), // not deleted in time
			"b":    metav1.NewTime(now.Add(-12 * time.Second)), // still charged for 8 s
			"gone": metav1.NewTime(now.Add(-time.Second)),
		},
		UnavailablePods: map[string]metav1.Time{"c": metav1.NewTime(now.Add(-5 * time.Second))}, // 5 s of grace left
	}))
	annotated := gen.AddPodAnnotations(map[string]string{policyv1alpha1.PodRelatedPubAnnotation: "web-pub"})
	f := newFixture(t, objects{
		budgets: []*policyv1alpha1.PodUnavailableBudget{b},
		kube:    []runtime.Object{deployment(4), replicaSet(4), readyPod("a", annotated), readyPod("b", annotated), readyPod("c", annotated), readyPod("d", annotated)},
	})
	assert.Equal(t, 5*time.Second, f.sync(t, "default/web-pub"))
	writes := f.statusWrites()
	require.Len(t, writes, 1)
	st := writes[0].Status
	assert.Equal(t, []string{"b"}, keys(st.DisruptedPods))
	assert.Equal(t, []string{"c"}, keys(st.UnavailablePods))
	// a and d are available and not charged; desired 3.
	assert.Equal(t, []int32{0, 2, 3, 4}, []int32{st.UnavailableAllowed, st.CurrentAvailable, st.DesiredAvailable, st.TotalReplicas})
	events := gen.DrainEvents(f.recorder)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning NotDeleted Pod a was allowed to be deleted, evicted or resized more than 20s ago and is still there")
}

func TestSyncBoundsPodPatches(t *testing.T) {
	f := newFixture(t, objects{
		budgets: []*policyv1alpha1.PodUnavailableBudget{budget()},
		kube:    []runtime.Object{deployment(3), replicaSet(3), readyPod("a"), readyPod("b"), readyPod("c")},
		cfg:     Config{MaxPodPatches: 2},
	})
	assert.Equal(t, morePatchesAfter, f.sync(t, "default/web-pub"))
	assert.Len(t, f.podPatches(), 2)
}

func TestSyncOfAGoneBudget(t *testing.T) {
	f := newFixture(t, objects{})
	assert.Zero(t, f.sync(t, "default/nope"))
	assert.Empty(t, f.kruise.Actions())
}

func keys(m map[string]metav1.Time) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
