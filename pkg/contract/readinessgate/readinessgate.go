// Package readinessgate reads kruise's readiness gate on a pod: the condition KruisePodReady,
// which the CRR controller sets to take a pod out of its Services before containers are
// recreated. Only pods that list it in spec.readinessGates honour it.
package readinessgate

import (
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Declared reports whether the pod lists KruisePodReady in its readiness gates: only then does
// the condition decide its readiness.
func Declared(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == appsv1alpha1.KruisePodReadyConditionType {
			return true
		}
	}
	return false
}

// Declare adds KruisePodReady to the template's readiness gates unless it is there; it reports
// whether it added it. Readiness gates cannot be added to a running pod, so a workload that may
// later hold its pods not-ready declares the gate when it creates them.
func Declare(t *corev1.PodTemplateSpec) bool {
	for _, g := range t.Spec.ReadinessGates {
		if g.ConditionType == appsv1alpha1.KruisePodReadyConditionType {
			return false
		}
	}
	t.Spec.ReadinessGates = append(t.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appsv1alpha1.KruisePodReadyConditionType})
	return true
}

// Condition returns the pod's KruisePodReady condition, or nil when it has none.
func Condition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == appsv1alpha1.KruisePodReadyConditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
