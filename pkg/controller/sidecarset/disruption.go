package sidecarset

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// maxUnavailable bounds the unavailability a SidecarSet's own upgrades cause, not every pod it
// matches that is not Ready: a SidecarSet spans tenants, and one tenant's crash-looping or
// unschedulable pod must not hold back a sidecar patch everywhere else. OpenKruise counts every
// pod at the latest version that is not ready, so such a pod, once upgraded, holds the budget
// for as long as it stays broken.
//
// Whether a pod was available when the SidecarSet upgraded it is read from two timestamps: the
// UpdateTimestamp of the SidecarSet's entry in kruise.io/sidecarset-inplace-update-state (the
// controller's clock) and the lastTransitionTime of the pod's Ready condition (the kubelet's
// clock; kept while the status stays, by the kubelet and by pkg/workload/inplace alike). Both are whole
// seconds on the wire, so a pod that turned not Ready in the same second as its upgrade is
// ambiguous: choose does not take a pod that is not Ready until a second after it turned so
// (unreadyTooRecent), which makes "not Ready since before the upgrade" exact for the pods it
// takes. A pod made not Ready by the upgrade turns so only once the kubelet has stopped the old
// sidecar, later than the upgrade by that much; clocks further apart than that would make such a
// pod look broken before, and uncounted.

// disrupted reports whether pod's unavailability is the doing of the SidecarSet whose last
// in-place upgrade of it is state (nil: it never upgraded the pod in place, so a pod injected at
// creation and still starting is not counted). It is when the pod was not already not Ready at
// that upgrade (unreadyBefore) and either
//   - the upgrade is still running: its containers not all restarted, or a HotUpgrade hand-over
//     not yet flipped (running); or
//   - the pod is at the SidecarSet's current version (updated), its Ready condition is not True,
//     and its own workload is not updating it in place (that unavailability is the workload's,
//     counted by its own budget).
func disrupted(pod *corev1.Pod, state *pub.InPlaceUpdateState, running, updated, workloadUpdating bool) bool {
	if state == nil || unreadyBefore(pod, state.UpdateTimestamp.Time) {
		return false
	}
	if running {
		return true
	}
	ready, _, _ := readyCondition(pod)
	return updated && !ready && !workloadUpdating
}

// unreadyBefore: the pod's Ready condition is missing (never Ready: pending, say), or not True
// since a second before at.
func unreadyBefore(pod *corev1.Pod, at time.Time) bool {
	ready, since, ok := readyCondition(pod)
	if !ok {
		return true
	}
	return !ready && since.Truncate(time.Second).Before(at.Truncate(time.Second))
}

// unreadyTooRecent says how long to wait before pod, not Ready, can be upgraded without its
// not-readiness being taken for the upgrade's (its Ready condition turned False in now's second,
// or later by the kubelet's clock); 0 when it can be now.
func unreadyTooRecent(pod *corev1.Pod, now time.Time) time.Duration {
	ready, since, ok := readyCondition(pod)
	if !ok || ready {
		return 0
	}
	next := since.Truncate(time.Second).Add(time.Second)
	if !next.After(now) {
		return 0
	}
	return next.Sub(now)
}

// readyCondition reads the pod's Ready condition: whether it is True, since when its status
// holds, and whether the pod has one.
func readyCondition(pod *corev1.Pod) (ready bool, since time.Time, ok bool) {
	c, ok := podConditionOf(pod, corev1.PodReady)
	if !ok {
		return false, time.Time{}, false
	}
	return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time, true
}
