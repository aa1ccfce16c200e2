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

// InPlaceUpdateRestartingReason is the reason of InPlaceUpdateReady=True set before an update has
// finished: the kubelet has taken the new spec and the old containers no longer pass readiness,
// so Ready now follows the new containers' own readiness. Once the update is done the condition
// is written again with no reason.
const InPlaceUpdateRestartingReason = "ContainersRestarting"
