package uniteddeployment

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Reasons of the Schedulable subset condition, as the reference writes them.
const (
	reasonReschedule = "reschedule"
	reasonRecover    = "recover"
	reasonCreated    = "created"
)

// timer collects the soonest time a reconcile must look again; zero is never.
type timer struct{ after time.Duration }

func (t *timer) at(d time.Duration) {
	if d > 0 && (t.after == 0 || d < t.after) {
		t.after = d
	}
}

// stuckSince is, for a pod the scheduler gave up on for now (Pending, no node, PodScheduled
// False with reason Unschedulable), the time it was created; false otherwise. A pod still
// waiting for its first scheduling attempt does not count: its failure is an event that wakes
// the controller.
func stuckSince(pod *corev1.Pod) (time.Time, bool) {
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

// judgeAdaptive decides, for Adaptive without reservation, whether a subset is unschedulable:
// it still is while its Schedulable=False condition is younger than unschedulableDuration
// (then the condition turns True, reason "recover"), and it turns so when one of its pods has
// been stuck unscheduled longer than rescheduleCriticalSeconds (condition False, reason
// "reschedule"). It updates st's condition and asks t for the moments the answer can change.
func judgeAdaptive(st *appsv1alpha1.UnitedDeploymentSubsetStatus, pods []*corev1.Pod, statusReplicas, ready int32,
	strategy *appsv1alpha1.UnitedDeploymentScheduleStrategy, now time.Time, t *timer) bool {
	unschedulable := false
	hold := strategy.GetUnschedulableDuration()
	if c := st.GetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable); c != nil && c.Status == corev1.ConditionFalse {
		recover := c.LastTransitionTime.Add(hold)
		if now.Before(recover) {
			unschedulable = true
			t.at(recover.Sub(now))
		} else {
			st.SetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable, corev1.ConditionTrue, reasonRecover,
				"the subset is tried again after unschedulableDuration", metav1.NewTime(now))
		}
	}
	if ready >= statusReplicas {
		return unschedulable
	}
	critical := strategy.GetRescheduleCriticalDuration()
	stuck := 0
	for _, pod := range pods {
		since, ok := stuckSince(pod)
		if !ok {
			continue
		}
		if deadline := since.Add(critical); deadline.Before(now) {
			stuck++
		} else {
			t.at(deadline.Sub(now))
		}
	}
	if stuck > 0 {
		st.SetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable, corev1.ConditionFalse, reasonReschedule,
			"timeout pending pods found", metav1.NewTime(now))
		t.at(hold)
		unschedulable = true
	}
	return unschedulable
}

// reservation is a pod whose reserved label must change.
type reservation struct {
	pod      *corev1.Pod
	reserved bool
}

// judgeReserving decides, for Adaptive with reserveUnschedulablePods, which pods of a subset
// are reserved and so whether the subset is unschedulable, as the reference does:
//   - in a subset marked unschedulable, a pod without the reserved label is reserved;
//   - a reserved pod stays so until it has run Ready on the update revision for
//     unschedulableDuration;
//   - an unlabelled pod of the update revision is reserved once stuck unscheduled past
//     rescheduleCriticalSeconds; one of an older revision once the update itself is older than
//     that.
//
// It returns whether the subset was marked unschedulable, whether it is now, its reserved
// pods, how many of them are old-revision pods the update timed out on, and the label changes
// to write.
func judgeReserving(st *appsv1alpha1.UnitedDeploymentSubsetStatus, pods []*corev1.Pod, updateRevision string,
	updated *appsv1alpha1.UnitedDeploymentCondition, strategy *appsv1alpha1.UnitedDeploymentScheduleStrategy,
	now time.Time, t *timer) (marked, unschedulable bool, reserved, timeouts int32, changes []reservation) {
	if c := st.GetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable); c != nil {
		marked = c.Status == corev1.ConditionFalse
	}
	hold, critical := strategy.GetUnschedulableDuration(), strategy.GetRescheduleCriticalDuration()
	for _, pod := range pods {
		label, labelled := pod.Labels[appsv1alpha1.UnitedDeploymentReservedPodLabel]
		was := label == "true"
		var is bool
		switch {
		case marked && !labelled:
			is = true
			t.at(hold)
		case was:
			is = true
			if pod.Status.Phase == corev1.PodRunning && pod.Labels[RevisionLabel] == updateRevision {
				if c := podCondition(pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
					if end := c.LastTransitionTime.Add(hold); end.Before(now) {
						is = false
					} else {
						t.at(end.Sub(now))
					}
					break
				}
			}
			t.at(hold)
		case pod.Labels[RevisionLabel] == updateRevision:
			if since, ok := stuckSince(pod); ok {
				if deadline := since.Add(critical); deadline.Before(now) {
					is = true
				} else {
					t.at(deadline.Sub(now))
				}
			}
		case pod.DeletionTimestamp == nil && updated != nil:
			if deadline := updated.LastTransitionTime.Add(critical); deadline.Before(now) {
				is = true
				timeouts++
			} else {
				t.at(deadline.Sub(now))
			}
		}
		if is {
			reserved++
		}
		if is != was || !labelled {
			changes = append(changes, reservation{pod: pod, reserved: is})
		}
	}
	if reserved > 0 {
		unschedulable = true
		st.SetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable, corev1.ConditionFalse, reasonReschedule,
			"reserved pods found", metav1.NewTime(now))
	} else {
		st.SetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable, corev1.ConditionTrue, reasonReschedule,
			"no reserved pods", metav1.NewTime(now))
	}
	return marked, unschedulable, reserved, timeouts, changes
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
