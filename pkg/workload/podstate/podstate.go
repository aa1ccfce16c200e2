// Package podstate is what the CloneSet and Advanced StatefulSet controllers read of their pods
// to count and order them: readiness (an in-place update in progress counts as not ready),
// availability (ready long enough, not held by a lifecycle hook) and revision.
package podstate

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Ready is a workload's readiness of the pod: running, Ready, and not in the middle of an
// in-place update (the InPlaceUpdateReady condition, when the pod has it, is not False).
func Ready(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	ready := Condition(pod, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		return false
	}
	if c := Condition(pod, pub.InPlaceUpdateReady); c != nil && c.Status == corev1.ConditionFalse {
		return false
	}
	return true
}

// Available is Ready for at least minReadySeconds at now, in lifecycle state Normal (or none): a
// pod waiting on a hook is not available.
func Available(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !Ready(pod) {
		return false
	}
	switch pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey]) {
	case "", pub.LifecycleStateNormal:
	default:
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	since := Condition(pod, corev1.PodReady).LastTransitionTime
	return !since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// Revision is the revision (ControllerRevision name) the pod is at.
func Revision(pod *corev1.Pod) string { return pod.Labels[appsv1.ControllerRevisionHashLabelKey] }

// AvailableAfter is how long after now the first of pods that is Ready but not yet Available
// turns available by minReadySeconds, and a second more so that a recheck then finds it so; 0
// when none will (minReadySeconds 0, or every ready pod available already). A controller
// requeues after it, for status to count the pod without waiting for another event.
func AvailableAfter(pods []*corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	if minReadySeconds <= 0 {
		return 0
	}
	var soonest time.Duration
	for _, pod := range pods {
		if !Ready(pod) || Available(pod, minReadySeconds, now) {
			continue
		}
		since := Condition(pod, corev1.PodReady).LastTransitionTime.Time
		left := since.Add(time.Duration(minReadySeconds)*time.Second).Sub(now) + time.Second
		if left > 0 && (soonest == 0 || left < soonest) {
			soonest = left
		}
	}
	return soonest
}

// Condition is the pod's condition of type t; nil when it has none.
func Condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
