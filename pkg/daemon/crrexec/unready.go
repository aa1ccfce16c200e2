package crrexec

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

// unreadyWait says whether the first kill of a CRR must still wait for
// strategy.unreadyGracePeriodSeconds, and for how long (zero: until the
// next pod event). kruise-controller sets the pod's KruisePodReady
// condition to False when it admits the request; the kill waits until the
// daemon's view of the pod shows it False and the grace has passed since
// its lastTransitionTime. A pod without the KruisePodReady readiness gate
// cannot be made not-ready that way: an Event says so and nothing waits.
func (e *Executor) unreadyWait(crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, logger klog.Logger) (time.Duration, bool) {
	var g int64
	if s := crr.Spec.Strategy; s != nil && s.UnreadyGracePeriodSeconds != nil {
		g = *s.UnreadyGracePeriodSeconds
	}
	if g <= 0 {
		return 0, false
	}
	if !readinessgate.Declared(pod) {
		if e.warnOnce(crr.UID) {
			e.recorder.Eventf(crr, corev1.EventTypeWarning, ReasonUnreadyGateMissing,
				"pod does not declare readiness gate %s; recreating without an unready period", appsv1alpha1.KruisePodReadyConditionType)
		}
		return 0, false
	}
	cond := readinessgate.Condition(pod)
	if cond == nil || cond.Status != corev1.ConditionFalse {
		logger.V(2).Info("Waiting for the pod to be marked not-ready", "condition", appsv1alpha1.KruisePodReadyConditionType)
		return 0, true
	}
	since := cond.LastTransitionTime.Time
	if v, ok := crr.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; ok {
		// The controller recorded when the unready period covering this
		// request began; an older transition is a pod cache that has not
		// caught up (a readiness restored for an earlier request, say).
		if acquired, err := time.Parse(time.RFC3339, v); err == nil && since.Before(acquired) {
			logger.V(2).Info("Pod cache older than the unready period; waiting", "since", since, "acquired", acquired)
			return 0, true
		}
	}
	until := since.Add(durations.Seconds(g))
	if now := e.clock.Now(); now.Before(until) {
		logger.V(2).Info("Waiting for the unready grace period", "unreadySince", since, "remaining", until.Sub(now))
		return until.Sub(now), true
	}
	return 0, false
}

// begun reports whether a kill of the request has begun (by this daemon or
// a previous one): only the first kill waits for the unready grace.
func begun(s *statusWriter) bool {
	for _, ctr := range s.cur().Spec.Containers {
		if st := s.state(ctr.Name); st.IsKilled || st.Phase != appsv1alpha1.ContainerRecreateRequestPending {
			return true
		}
	}
	return false
}
