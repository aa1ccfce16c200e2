package pub

import corev1 "k8s.io/api/core/v1"

// Pod condition types, also used as readiness gates, that kruise's workloads write.
const (
	// InPlaceUpdateReady is False while a pod is being updated in place and True otherwise; a
	// workload's pods carry it as a readiness gate so that the pod is not Ready in between.
	InPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"
	// KruisePodReady is False while a lifecycle hook with markPodNotReady holds the pod.
	KruisePodReady corev1.PodConditionType = "KruisePodReady"
)
