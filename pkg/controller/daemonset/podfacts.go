package daemonset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
)

// Revision is the pod's revision (ControllerRevision name) from its controller-revision-hash label.
func Revision(pod *corev1.Pod) string { return pod.Labels[appsv1.ControllerRevisionHashLabelKey] }

// Ended reports whether the pod's containers will not run again (Failed or Succeeded): a daemon
// pod that ended is deleted so that its node gets a new one.
func Ended(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// Terminating reports whether the pod is being deleted.
func Terminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// PreparingDelete reports whether the pod waits on its preDelete hook before being deleted.
func PreparingDelete(pod *corev1.Pod) bool {
	return lifecycle.StateOf(pod) == pub.LifecycleStatePreparingDelete
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Ready reports whether the pod's Ready condition is True.
func Ready(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Available reports whether the pod has been ready for minReadySeconds at now and is not
// waiting to be deleted (a pod in PreparingDelete is on its way out, so it is not counted on).
func Available(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !Ready(pod) || Terminating(pod) || PreparingDelete(pod) {
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	since := readyCondition(pod).LastTransitionTime.Time
	return !since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// availableIn is how long until a ready pod becomes available; 0 when it is, or is not ready.
func availableIn(pod *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	if minReadySeconds <= 0 || !Ready(pod) || Available(pod, minReadySeconds, now) {
		return 0
	}
	since := readyCondition(pod).LastTransitionTime.Time
	return since.Add(time.Duration(minReadySeconds)*time.Second).Sub(now) + time.Second
}
