package gen

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetPodCreationTimestamp sets when the pod was created.
func SetPodCreationTimestamp(at time.Time) PodModifier {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{Time: at} }
}

// SetPodInitContainerStatus sets the status of the init container st
// names to st, or appends st when the pod has no status for it.
func SetPodInitContainerStatus(st corev1.ContainerStatus) PodModifier {
	return func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = upsert(p.Status.InitContainerStatuses, st, func(s corev1.ContainerStatus) string { return s.Name })
	}
}
