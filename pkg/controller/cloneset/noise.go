package cloneset

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

// podChangeMatters reports whether a pod update changes anything the CloneSet controller reads,
// for the CloneSetEventHandlerOptimization gate: what it skips is status noise (probe and
// transition times, condition messages, IPs, container start times). Unlike OpenKruise's filter
// it passes every change of metadata (a preNormal hook's label or finalizer: OpenKruise #2060),
// of phase (a failed or evicted pod: #2481), of the generation the kubelet has synced (an
// in-place update's gate is released on it), of a condition's status, and of a container's
// identity, readiness or resources.
func podChangeMatters(old, cur *corev1.Pod) bool {
	if !reflect.DeepEqual(old.Labels, cur.Labels) || !reflect.DeepEqual(old.Annotations, cur.Annotations) ||
		!reflect.DeepEqual(old.Finalizers, cur.Finalizers) || !reflect.DeepEqual(old.OwnerReferences, cur.OwnerReferences) ||
		!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) || old.Generation != cur.Generation {
		return true
	}
	if old.Spec.NodeName != cur.Spec.NodeName || old.Status.Phase != cur.Status.Phase ||
		old.Status.ObservedGeneration != cur.Status.ObservedGeneration {
		return true
	}
	if !sameConditions(old.Status.Conditions, cur.Status.Conditions) {
		return true
	}
	return !sameContainers(old.Status.ContainerStatuses, cur.Status.ContainerStatuses) ||
		!sameContainers(old.Status.InitContainerStatuses, cur.Status.InitContainerStatuses)
}

// sameConditions compares conditions by type and status only.
func sameConditions(a, b []corev1.PodCondition) bool {
	if len(a) != len(b) {
		return false
	}
	status := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range a {
		status[c.Type] = c.Status
	}
	for _, c := range b {
		if s, ok := status[c.Type]; !ok || s != c.Status {
			return false
		}
	}
	return true
}

// sameContainers compares what an in-place update and availability read of each container.
func sameContainers(a, b []corev1.ContainerStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name || x.ContainerID != y.ContainerID || x.ImageID != y.ImageID || x.Image != y.Image ||
			x.Ready != y.Ready || x.RestartCount != y.RestartCount || !reflect.DeepEqual(x.Started, y.Started) ||
			!reflect.DeepEqual(x.Resources, y.Resources) ||
			(x.State.Running == nil) != (y.State.Running == nil) || (x.State.Terminated == nil) != (y.State.Terminated == nil) {
			return false
		}
	}
	return true
}

// podNoise is podChangeMatters' negation, the PodEvents.Noise of the gate.
func podNoise(old, cur *corev1.Pod) bool { return !podChangeMatters(old, cur) }
