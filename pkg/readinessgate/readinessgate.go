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

// Condition returns the pod's KruisePodReady condition, or nil when it has none.
func Condition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == appsv1alpha1.KruisePodReadyConditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
