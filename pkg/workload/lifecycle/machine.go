package lifecycle

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Want is what the workload wants for a pod in this pass.
type Want int

const (
	// WantNothing: a refresh; move the pod on if its hooks let it.
	WantNothing Want = iota
	// WantCreate: the pod is about to be created.
	WantCreate
	// WantDelete: scale in, a recreate update, or a specified delete.
	WantDelete
	// WantUpdate: update the pod in place to the target revision.
	WantUpdate
	// WantUpdateFinished: a refresh of a pod whose in-place update has completed (the caller
	// checked, e.g. with pkg/workload/inplace). For a pod not in Updating it is WantNothing.
	WantUpdateFinished
	// WantKeep: the workload scaled up again and wants a pod in PreparingDelete back. The caller
	// does not ask this for a pod it was told to delete by name (specified delete).
	WantKeep
)

var wantNames = [...]string{"Nothing", "Create", "Delete", "Update", "UpdateFinished", "Keep"}

func (w Want) String() string {
	if w >= 0 && int(w) < len(wantNames) {
		return wantNames[w]
	}
	return fmt.Sprintf("Want(%d)", int(w))
}

// Action is what the workload does with the pod.
type Action int

const (
	// ActionNone: nothing to do in this state.
	ActionNone Action = iota
	// ActionWait: a hook (or the scheduler, or the in-place update) holds the pod; look again on
	// its next event.
	ActionWait
	// ActionSetState: write Decision.State (Decision.Apply or Decision.Patch), after
	// ReadinessPatch for that state.
	ActionSetState
	// ActionDelete: delete the pod now.
	ActionDelete
	// ActionUpdate: update the pod in place now, writing state Updating in the same update
	// (StateSetter(pub.LifecycleStateUpdating, clk)).
	ActionUpdate
	// ActionRefuse: what the workload wants cannot be done in this state; Reason says why.
	ActionRefuse
)

var actionNames = [...]string{"None", "Wait", "SetState", "Delete", "Update", "Refuse"}

func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Input is what Decide looks at.
type Input struct {
	// Pod as read, not changed by Decide.
	Pod *corev1.Pod
	// Lifecycle is the workload's; nil for none.
	Lifecycle *pub.Lifecycle
	Want      Want
	// AtTargetRevision: the pod's revision is the workload's update revision. For a pod in
	// PreparingUpdate this means the workload rolled back while the pod waited on its hook: the
	// pod needs no update any more (OpenKruise #1156).
	AtTargetRevision bool
}

// Decision is the next step for a pod.
type Decision struct {
	Action Action
	// State is the state the pod is in after the action: the state to write for ActionSetState,
	// Updating for ActionUpdate, else the pod's current state.
	State pub.LifecycleStateType
	// RestoreHook, with ActionSetState, is a hook whose labels and finalizers are put back on the
	// pod in the same write: an Updated pod taken into a new update goes through its
	// inPlaceUpdate hook again, so the hook's owner sees it as on the first update.
	RestoreHook *pub.LifecycleHook
	// Reason is a short sentence for Events and logs.
	Reason string
}

// Decide returns the next step for in.Pod. It is pure: it reads the pod and the workload's
// Lifecycle and changes neither.
func Decide(in Input) Decision {
	state := StateOf(in.Pod)
	switch in.Want {
	case WantCreate:
		return setState(pub.LifecycleStatePreparingNormal, "new pod starts in PreparingNormal")
	case WantDelete:
		return decideDelete(in, state)
	case WantUpdate:
		return decideUpdate(in, state)
	case WantKeep:
		return decideKeep(in, state)
	case WantNothing, WantUpdateFinished:
		return decideRefresh(in, state)
	}
	return Decision{Action: ActionRefuse, State: state, Reason: fmt.Sprintf("unknown want %v", in.Want)}
}

func setState(s pub.LifecycleStateType, reason string) Decision {
	return Decision{Action: ActionSetState, State: s, Reason: reason}
}

func stay(a Action, s pub.LifecycleStateType, reason string) Decision {
	return Decision{Action: a, State: s, Reason: reason}
}

// decideRefresh moves a pod on by its hooks alone.
func decideRefresh(in Input, state pub.LifecycleStateType) Decision {
	switch state {
	case "":
		return stay(ActionNone, state, "no lifecycle state: counted as Normal")
	case pub.LifecycleStatePreparingNormal:
		return decidePreparingNormal(in, state)
	case pub.LifecycleStateNormal:
		return stay(ActionNone, state, "Normal")
	case pub.LifecycleStatePreparingUpdate:
		if in.AtTargetRevision {
			return afterUpdate(in, "rolled back to the pod's revision while it waited to be updated")
		}
		if Hooked(inPlaceUpdate(in.Lifecycle), in.Pod) {
			return stay(ActionWait, state, "inPlaceUpdate hook still on the pod")
		}
		return stay(ActionNone, state, "inPlaceUpdate hook released; waiting for the update")
	case pub.LifecycleStateUpdating:
		if in.Want == WantUpdateFinished {
			return afterUpdate(in, "in-place update finished")
		}
		return stay(ActionWait, state, "in-place update in progress")
	case pub.LifecycleStateUpdated:
		if h := inPlaceUpdate(in.Lifecycle); h == nil || AllHooked(h, in.Pod) {
			return setState(pub.LifecycleStateNormal, "inPlaceUpdate hook back on the updated pod")
		}
		return stay(ActionWait, state, "waiting for all of the inPlaceUpdate hook to be put back")
	case pub.LifecycleStatePreparingDelete:
		if Hooked(preDelete(in.Lifecycle), in.Pod) {
			return stay(ActionWait, state, "preDelete hook still on the pod")
		}
		// Deleting is the workload's, with its expectations: it asks WantDelete.
		return stay(ActionNone, state, "preDelete hook released; waiting for the workload to delete the pod")
	}
	return stay(ActionNone, state, fmt.Sprintf("unknown lifecycle state %q: left as it is", state))
}

// decidePreparingNormal: with a preNormal hook, Normal once all of it is on the pod; without one,
// Normal once the pod is scheduled, so that the label write does not race the scheduler's bind
// (OpenKruise #2087, after a kube-scheduler fault, #1485).
func decidePreparingNormal(in Input, state pub.LifecycleStateType) Decision {
	if h := preNormal(in.Lifecycle); h != nil {
		if AllHooked(h, in.Pod) {
			return setState(pub.LifecycleStateNormal, "all of the preNormal hook is on the pod")
		}
		return stay(ActionWait, state, "waiting for all of the preNormal hook's labels and finalizers")
	}
	if in.Pod == nil || in.Pod.Spec.NodeName == "" {
		return stay(ActionWait, state, "waiting for the pod to be scheduled")
	}
	return setState(pub.LifecycleStateNormal, "scheduled; no preNormal hook")
}

// afterUpdate is where a pod at the target revision goes: Updated while the inPlaceUpdate hook is
// not all back, else Normal. Without an inPlaceUpdate hook it is Normal at once (OpenKruise
// passes through Updated for one pass when the workload has a Lifecycle but no such hook).
func afterUpdate(in Input, why string) Decision {
	if h := inPlaceUpdate(in.Lifecycle); h != nil && !AllHooked(h, in.Pod) {
		return setState(pub.LifecycleStateUpdated, why+"; waiting for the inPlaceUpdate hook to be put back")
	}
	return setState(pub.LifecycleStateNormal, why)
}

// decideDelete: a pod holding the preDelete hook waits in PreparingDelete; any other is deleted,
// whatever its state.
func decideDelete(in Input, state pub.LifecycleStateType) Decision {
	if Hooked(preDelete(in.Lifecycle), in.Pod) {
		if state == pub.LifecycleStatePreparingDelete {
			return stay(ActionWait, state, "preDelete hook still on the pod")
		}
		return setState(pub.LifecycleStatePreparingDelete, "preDelete hook on the pod; waiting for it to be released")
	}
	if state == pub.LifecycleStatePreparingDelete {
		return stay(ActionDelete, state, "preDelete hook released")
	}
	return stay(ActionDelete, state, "no preDelete hook on the pod")
}

// decideUpdate: a pod holding the inPlaceUpdate hook waits in PreparingUpdate; any other is
// updated.
func decideUpdate(in Input, state pub.LifecycleStateType) Decision {
	hook := inPlaceUpdate(in.Lifecycle)
	switch state {
	case "", pub.LifecycleStatePreparingNormal, pub.LifecycleStateNormal:
		if Hooked(hook, in.Pod) {
			return setState(pub.LifecycleStatePreparingUpdate, "inPlaceUpdate hook on the pod; waiting for it to be released")
		}
		return stay(ActionUpdate, pub.LifecycleStateUpdating, "no inPlaceUpdate hook on the pod")
	case pub.LifecycleStateUpdated:
		if hook != nil {
			d := setState(pub.LifecycleStatePreparingUpdate, "updated again before the inPlaceUpdate hook was back: hook restored")
			d.RestoreHook = hook
			return d
		}
		return stay(ActionUpdate, pub.LifecycleStateUpdating, "no inPlaceUpdate hook")
	case pub.LifecycleStatePreparingUpdate:
		if Hooked(hook, in.Pod) {
			return stay(ActionWait, state, "inPlaceUpdate hook still on the pod")
		}
		return stay(ActionUpdate, pub.LifecycleStateUpdating, "inPlaceUpdate hook released")
	case pub.LifecycleStateUpdating:
		return stay(ActionUpdate, pub.LifecycleStateUpdating, "in-place update continues")
	case pub.LifecycleStatePreparingDelete:
		return stay(ActionRefuse, state, "pod is waiting to be deleted")
	}
	return stay(ActionRefuse, state, fmt.Sprintf("unknown lifecycle state %q", state))
}

// decideKeep takes a pod back from PreparingDelete, unless a hook marks pods not-ready: such a pod
// may have left an update half-way (Updating → PreparingDelete), and taking it back would lose
// the Updated step and its hook (OpenKruise refuses for the same reason).
func decideKeep(in Input, state pub.LifecycleStateType) Decision {
	if state != pub.LifecycleStatePreparingDelete {
		return stay(ActionNone, state, "pod is not waiting to be deleted")
	}
	if MarksNotReady(in.Lifecycle) {
		return stay(ActionRefuse, state, "a lifecycle hook has markPodNotReady: a pod in PreparingDelete is not taken back")
	}
	return setState(pub.LifecycleStatePreparingNormal, "scaled up again: deletion cancelled")
}
