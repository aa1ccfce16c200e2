package inplace

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Action is what a pod's in-place update needs next.
type Action string

const (
	// ActionNone: nothing to write now (see Decision.Waiting).
	ActionNone Action = ""
	// ActionFinishGrace: the grace period is over; apply the update (FinishGrace).
	ActionFinishGrace Action = "FinishGrace"
	// ActionNextBatch: the current batch is done and ready; apply the next one (NextBatch).
	ActionNextBatch Action = "NextBatch"
	// ActionMarkReady: every batch is done; set InPlaceUpdateReady=True (ReadyStatusPatch).
	ActionMarkReady Action = "MarkReady"
	// ActionReleaseGate: the last batch is under way on the kubelet; set InPlaceUpdateReady=True
	// with reason ContainersRestarting (ReleaseStatusPatch), so the pod turns Ready with its new
	// containers' first passing probes.
	ActionReleaseGate Action = "ReleaseGate"
	// ActionHoldGate: the gate was released but the pod is Ready on a container the update
	// replaces; set InPlaceUpdateReady=False again until the update is done (HoldStatusPatch).
	ActionHoldGate Action = "HoldGate"
	// ActionRestateNotReady: the gate is False, yet the pod is Ready on a container the update
	// replaces: the kubelet wrote back the Ready=True it last computed (its periodic status
	// reconcile, before its sync of the update). Set Ready=False again, with kruise's message so
	// that the kubelet syncs and records it (RestateNotReadyStatusPatch).
	ActionRestateNotReady Action = "RestateNotReady"
)

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// Waiting says what an unfinished update waits for, when Action is ActionNone.
	Waiting string
	// RequeueAfter, when positive, is when to look again: the rest of a grace period. Other
	// waits end with a change of the pod, which the caller watches.
	RequeueAfter time.Duration
}

// Decide reads the pod and says what its in-place update needs at time now. A pod that declares
// the InPlaceUpdateReady readiness gate and has no update under way is marked ready too: that is
// how a new pod of a workload using the gate becomes ready at all. The gate of an image update is
// released before the update is done once the kubelet is replacing the containers
// (kubeletRestarting), held again for good should the pod turn Ready on an old container, and
// written again without its reason when the update is done. A Ready=True on an old container
// while the gate is False (the kubelet writing back its cached status) is set False again.
func Decide(pod *corev1.Pod, now time.Time) (Decision, error) {
	grace, err := ReadGrace(pod)
	if err != nil {
		return Decision{}, err
	}
	state, err := ReadState(pod)
	if err != nil {
		return Decision{}, err
	}
	if grace != nil {
		if state == nil {
			return Decision{}, graceWithoutState(pod)
		}
		left := time.Duration(grace.GraceSeconds)*time.Second - now.Sub(state.UpdateTimestamp.Time)
		if left > 0 {
			return Decision{Waiting: "grace period", RequeueAfter: roundUpToSecond(left)}, nil
		}
		return Decision{Action: ActionFinishGrace}, nil
	}
	if state != nil {
		if done, waiting := containersDone(pod, state); !done {
			if DeclaresReadinessGate(pod) {
				switch {
				case released(pod) && readyOnOldContainer(pod, state):
					return Decision{Action: ActionHoldGate}, nil
				case conditionIs(pod, corev1.ConditionFalse) && readyOnOldContainer(pod, state):
					return Decision{Action: ActionRestateNotReady}, nil
				case conditionIs(pod, corev1.ConditionFalse) && !held(pod) && kubeletRestarting(pod, state):
					return Decision{Action: ActionReleaseGate}, nil
				}
			}
			return Decision{Waiting: waiting}, nil
		}
		if hasNext(state) {
			if state.PreCheckBeforeNext != nil {
				if c := notReady(pod, state.PreCheckBeforeNext.ContainersRequiredReady); c != "" {
					return Decision{Waiting: fmt.Sprintf("container %s to be ready before the next batch", c)}, nil
				}
			}
			return Decision{Action: ActionNextBatch}, nil
		}
	}
	if DeclaresReadinessGate(pod) && (!conditionIs(pod, corev1.ConditionTrue) || released(pod)) {
		return Decision{Action: ActionMarkReady}, nil
	}
	return Decision{}, nil
}

// UpdateDone reports whether the pod's last in-place update is applied in full: no grace period
// left, no batch left, and every container touched runs as asked. A pod never updated in place
// is done. waiting says what is awaited otherwise.
func UpdateDone(pod *corev1.Pod) (done bool, waiting string, err error) {
	grace, err := ReadGrace(pod)
	if err != nil {
		return false, "", err
	}
	if grace != nil {
		return false, "grace period", nil
	}
	state, err := ReadState(pod)
	if err != nil || state == nil {
		return err == nil, "", err
	}
	if ok, why := containersDone(pod, state); !ok {
		return false, why, nil
	}
	if hasNext(state) {
		return false, "later batches", nil
	}
	return true, "", nil
}

func roundUpToSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		return d + time.Second - r
	}
	return d
}
