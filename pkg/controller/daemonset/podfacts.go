package daemonset

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

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

// Advanced DaemonSet keeps the built-in DaemonSet's readiness rules rather than podstate's (by
// which CloneSet and Advanced StatefulSet count), on purpose: it is a drop-in for the built-in
// kind (docs/daemonset.md, migrating), so its numberReady and numberAvailable count the pods the
// built-in controller would. Ready is therefore the bare Ready condition (podstate also wants
// phase Running and InPlaceUpdateReady not False; here an in-place update shows through that
// readiness gate, as the pod's Ready condition). Available leaves out a terminating pod and one
// in PreparingDelete, the only state its lifecycle (a preDelete hook alone) holds a pod in;
// podstate leaves out every state but Normal and leaves terminating pods to its callers.
// The pod's revision is podstate.Revision.

// Ready reports whether the pod's Ready condition is True.
func Ready(pod *corev1.Pod) bool {
	c := podstate.Condition(pod, corev1.PodReady)
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
	since := podstate.Condition(pod, corev1.PodReady).LastTransitionTime.Time
	return !since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// availableIn is how long until a ready pod becomes available; 0 when it is, or is not ready.
func availableIn(pod *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	if minReadySeconds <= 0 || !Ready(pod) || Available(pod, minReadySeconds, now) {
		return 0
	}
	since := podstate.Condition(pod, corev1.PodReady).LastTransitionTime.Time
	return since.Add(time.Duration(minReadySeconds)*time.Second).Sub(now) + time.Second
}
