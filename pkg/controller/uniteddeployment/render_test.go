package uniteddeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestRenderEveryKind(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			ud := newUD(k, 6)
			ud.Spec.Topology.Subsets[1].Patch = raw(`{"metadata":{"labels":{"patched":"yes"}},"spec":{"containers":[{"name":"main","image":"nginx:2"}]}}`)
			w, err := render(ud, desired{subset: "b", revision: "web-123", replicas: 4, partition: 1})
			require.NoError(t, err)

			assert.Equal(t, "web-b-", w.GetGenerateName())
			assert.Equal(t, ns, w.GetNamespace())
			assert.Equal(t, map[string]string{"app": "web", "team": "x", RevisionLabel: "web-123", appsv1alpha1.SubSetNameLabelKey: "b"}, w.GetLabels())
			assert.Equal(t, "n", w.GetAnnotations()["note"])
			assert.Equal(t, string(ud.Spec.Topology.Subsets[1].Patch.Raw), w.GetAnnotations()[appsv1alpha1.SubsetPatchAnnotation])
			ref := metav1.GetControllerOf(w)
			require.NotNil(t, ref)
			assert.Equal(t, metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "UnitedDeployment", Name: "web", UID: "uid-web",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, *ref)

			pod := podOf(w)
			assert.Equal(t, map[string]string{"app": "web", RevisionLabel: "web-123", appsv1alpha1.SubSetNameLabelKey: "b", "patched": "yes"}, pod.Labels)
			zoneB := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}
			terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			require.Len(t, terms, 2)
			for _, term := range terms {
				assert.Contains(t, term.MatchExpressions, zoneB, "the subset's term is ANDed into every required term")
				assert.Len(t, term.MatchExpressions, 2)
			}
			assert.Equal(t, []corev1.Toleration{{Key: "base", Operator: corev1.TolerationOpExists}, {Key: "zone-b", Operator: corev1.TolerationOpExists}}, pod.Spec.Tolerations)
			assert.Equal(t, "nginx:2", pod.Spec.Containers[0].Image, "the patch merges last")

			wantSelector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1alpha1.SubSetNameLabelKey: "b"}}
			switch o := w.(type) {
			case *appsv1beta1.CloneSet:
				assert.Equal(t, wantSelector, o.Spec.Selector)
				assert.Equal(t, int32(4), *o.Spec.Replicas)
				assert.Equal(t, ptr.To(intstr.FromInt32(1)), o.Spec.UpdateStrategy.RollingUpdate.Partition)
			case *appsv1beta1.StatefulSet:
				assert.Equal(t, wantSelector, o.Spec.Selector)
				assert.Equal(t, int32(4), *o.Spec.Replicas)
				assert.Equal(t, int32(1), *o.Spec.UpdateStrategy.RollingUpdate.Partition)
			case *appsv1.StatefulSet:
				assert.Equal(t, wantSelector, o.Spec.Selector)
				assert.Equal(t, int32(4), *o.Spec.Replicas)
				assert.Equal(t, int32(1), *o.Spec.UpdateStrategy.RollingUpdate.Partition)
			case *appsv1.Deployment:
				assert.Equal(t, wantSelector, o.Spec.Selector)
				assert.Equal(t, int32(4), *o.Spec.Replicas)
			default:
				t.Fatalf("unexpected %T", w)
			}
			e, ok := describe(w)
			require.True(t, ok)
			assert.Equal(t, k, e.kind)
			assert.Equal(t, "b", e.subset)
			assert.True(t, selectorFits(ud, e))
			if k != kindDeployment {
				assert.Equal(t, int32(1), e.partition)
			}
		})
	}
}

func TestRenderWithoutAffinityMakesOneTerm(t *testing.T) {
	ud := newUD(kindCloneSet, 3)
	ud.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Affinity = nil
	w, err := render(ud, desired{subset: "a", revision: "r"})
	require.NoError(t, err)
	terms := podOf(w).Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	assert.Equal(t, []corev1.NodeSelectorTerm{{MatchExpressions: ud.Spec.Topology.Subsets[0].NodeSelectorTerm.MatchExpressions}}, terms)
}

func TestRenderBadPatchFails(t *testing.T) {
	ud := newUD(kindCloneSet, 3)
	ud.Spec.Topology.Subsets[0].Patch = raw(`{"spec":{"containers":"not a list"}}`)
	_, err := render(ud, desired{subset: "a", revision: "r"})
	assert.Error(t, err)
}

func TestGenerateNameFallsBackWhenTooLong(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'x'
	}
	assert.Equal(t, "web-", generateName("web", string(long)))
	assert.Equal(t, "web-a-", generateName("web", "a"))
}

func TestOnDeleteStatefulSetHasNoPartition(t *testing.T) {
	ud := newUD(kindStatefulSet, 3)
	ud.Spec.Template.StatefulSetTemplate.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	assert.False(t, partitioned(ud))
	w, err := render(ud, desired{subset: "a", revision: "r", replicas: 1, partition: 1})
	require.NoError(t, err)
	e, _ := describe(w)
	_, updates := plan(ud, map[string]existing{"a": e}, map[string]int32{"a": 1}, map[string]int32{"a": 1}, "r", nil)
	assert.Empty(t, updates, "a partition it cannot carry must not cause an update every reconcile")
}
