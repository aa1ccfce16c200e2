package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestPodFromLeavesTheBaseAlone(t *testing.T) {
	base := Pod("web", SetPodNamespace("default"), AddPodLabels(map[string]string{"app": "web"}))
	p := PodFrom(base, SetPodNamespace("other"), AddPodLabels(map[string]string{"app": "db", "tier": "1"}))
	assert.Equal(t, "other", p.Namespace)
	assert.Equal(t, map[string]string{"app": "db", "tier": "1"}, p.Labels)
	assert.Equal(t, "default", base.Namespace)
	assert.Equal(t, map[string]string{"app": "web"}, base.Labels)
}

// Status and condition setters replace the entry of the same name or type
// in place and append the others, so a modifier can change a base's entry.
func TestPodSettersReplaceByKey(t *testing.T) {
	p := Pod("web",
		SetPodContainerStatus(corev1.ContainerStatus{Name: "a", ContainerID: "1"}),
		SetPodContainerStatus(corev1.ContainerStatus{Name: "b", ContainerID: "2"}),
		SetPodContainerStatus(corev1.ContainerStatus{Name: "a", ContainerID: "3"}),
		SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}),
		SetPodCondition(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}),
		SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}),
	)
	assert.Equal(t, []corev1.ContainerStatus{{Name: "a", ContainerID: "3"}, {Name: "b", ContainerID: "2"}}, p.Status.ContainerStatuses)
	assert.Equal(t, []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}, p.Status.Conditions)
}

func TestNilModifierChangesNothing(t *testing.T) {
	assert.Equal(t, Pod("web"), Pod("web", nil))
}

func TestAddPodAnnotationsMerges(t *testing.T) {
	base := Pod("web", AddPodAnnotations(map[string]string{"a": "1", "b": "2"}))
	p := PodFrom(base, AddPodAnnotations(map[string]string{"b": "3"}))
	assert.Equal(t, map[string]string{"a": "1", "b": "3"}, p.Annotations)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, base.Annotations)
}
