package spread

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// SchedulableRecovery is how long the Adaptive strategy keeps a subset Schedulable=False after
// its last pod that could not be scheduled (OpenKruise's 5 minutes): new pods skip it meanwhile.
const SchedulableRecovery = 300 * time.Second

// rescheduleCritical is how long a pod may stay unschedulable in its subset before the Adaptive
// strategy moves it on; 0 when the strategy is Fixed or the time is unset or not positive (then
// the subsets carry no Schedulable condition).
func rescheduleCritical(ws *appsv1alpha1.WorkloadSpread) time.Duration {
	s := ws.Spec.ScheduleStrategy
	if s.Type != appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType || s.Adaptive == nil || s.Adaptive.RescheduleCriticalSeconds == nil ||
		*s.Adaptive.RescheduleCriticalSeconds <= 0 {
		return 0
	}
	return time.Duration(*s.Adaptive.RescheduleCriticalSeconds) * time.Second
}

// Unschedulable reports whether the scheduler has found no node for pod (pending, unbound, not
// terminating, PodScheduled False for reason Unschedulable), and if so since when the Adaptive
// strategy counts: the pod's creation, as OpenKruise counts it.
func Unschedulable(pod *corev1.Pod) (since time.Time, ok bool) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodPending || pod.Spec.NodeName != "" {
		return time.Time{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return pod.CreationTimestamp.Time, true
		}
	}
	return time.Time{}, false
}

// stuckPods returns the pods unschedulable for at least critical at now, and when the next
// of the others reaches it (0: none will).
func stuckPods(pods []*corev1.Pod, critical time.Duration, now time.Time) ([]*corev1.Pod, time.Duration) {
	var failed []*corev1.Pod
	var next time.Duration
	for _, p := range pods {
		since, ok := Unschedulable(p)
		if !ok {
			continue
		}
		left := since.Add(critical).Sub(now)
		if left <= 0 {
			failed = append(failed, p)
			continue
		}
		next = sooner(next, left)
	}
	return failed, next
}

func oldCondition(st *appsv1alpha1.WorkloadSpreadSubsetStatus) *appsv1alpha1.WorkloadSpreadSubsetCondition {
	if st == nil {
		return nil
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == appsv1alpha1.SubsetSchedulable {
			return &st.Conditions[i]
		}
	}
	return nil
}

// schedulableCondition is a subset's Schedulable condition under the Adaptive strategy: always True for
// the last subset; False while some of its pods cannot be scheduled; True again SchedulableRecovery
// after it turned False (recovered says it turns so now; next is when it will). The transition
// time is kept while the status stays.
func schedulableCondition(old *appsv1alpha1.WorkloadSpreadSubsetCondition, last, failing bool, now time.Time) (
	cond appsv1alpha1.WorkloadSpreadSubsetCondition, recovered bool, next time.Duration) {
	status := corev1.ConditionTrue
	switch {
	case last:
	case failing:
		status = corev1.ConditionFalse
	case old != nil && old.Status == corev1.ConditionFalse:
		left := old.LastTransitionTime.Add(SchedulableRecovery).Sub(now)
		if left > 0 {
			status, next = corev1.ConditionFalse, left
		} else {
			recovered = true
		}
	}
	cond = appsv1alpha1.WorkloadSpreadSubsetCondition{Type: appsv1alpha1.SubsetSchedulable, Status: status, LastTransitionTime: metav1.NewTime(now)}
	if old != nil && old.Status == status {
		cond = *old.DeepCopy()
	}
	return cond, recovered, next
}
