package inplace

import (
	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// Operation is what the update of pod by s (with a grace period of graceSeconds) is to a
// PodUnavailableBudget: UPDATE when it takes the pod out of service (a container restarts, or the
// InPlaceUpdateReady gate holds the pod out during a grace period), RESIZE when it only changes
// cpu and memory the kubelet applies to the running containers, and "" when it changes neither
// (metadata only), which no budget guards.
func (s *Spec) Operation(pod *corev1.Pod, graceSeconds int32) policyv1alpha1.PubOperation {
	switch {
	case s.RestartsContainers(pod) || (graceSeconds > 0 && DeclaresReadinessGate(pod)):
		return policyv1alpha1.PubUpdateOperation
	case len(s.ContainerResources) > 0:
		return policyv1alpha1.PubResizeOperation
	}
	return ""
}
