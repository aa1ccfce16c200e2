package nodefit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPinToNodeAndTargetNode(t *testing.T) {
	spec := &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
		}}},
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}},
	}}}
	PinToNode(spec, "vm")
	req := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	assert.Equal(t, []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"vm"}}}}}, req.NodeSelectorTerms)
	assert.Len(t, spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, 1, "preferred terms kept")

	assert.Equal(t, "vm", TargetNode(&corev1.Pod{Spec: *spec}))
	assert.Equal(t, "bound", TargetNode(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "bound", Affinity: spec.Affinity}}))
	assert.Equal(t, "", TargetNode(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}))

	empty := &corev1.PodSpec{}
	PinToNode(empty, "n2")
	assert.Equal(t, "n2", TargetNode(&corev1.Pod{Spec: *empty}))
}
