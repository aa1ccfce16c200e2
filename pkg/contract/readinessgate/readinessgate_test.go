package readinessgate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestDeclaredAndCondition(t *testing.T) {
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "Other"}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	assert.False(t, Declared(pod))
	assert.Nil(t, Condition(pod))

	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: "KruisePodReady"})
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionFalse})
	assert.True(t, Declared(pod))
	if c := Condition(pod); assert.NotNil(t, c) {
		assert.Equal(t, corev1.ConditionFalse, c.Status)
	}
}
