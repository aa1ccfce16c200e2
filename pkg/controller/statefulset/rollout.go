package statefulset

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// Slot is one wanted ordinal, its position among the wanted ordinals (the lowest is 0) and its
// pod (nil while it has none).
type Slot struct {
	Ordinal  int
	Position int
	Pod      *corev1.Pod
}

// RolloutInput is what PlanRollout decides from.
type RolloutInput struct {
	// Slots are wanted ordinals, ascending: those that have a pod (a slot without one counts
	// as missing). Missing counts the wanted ordinals without a pod not in Slots, so that a
	// huge set is not listed out.
	Slots   []Slot
	Missing int
	// Rolling is updateStrategy RollingUpdate and not paused: old pods are updated. Without it
	// only pods asked to go by the specified-delete label are.
	Rolling bool
	// Partition is how many pods stay at their old revision: the pods of the first Partition
	// wanted ordinals (reserved ordinals do not count) are not updated.
	Partition int
	// MaxUnavailable (at least 1) bounds the wanted pods not available at any time; Parallel
	// sets only (OrderedReady updates one pod at a time).
	MaxUnavailable int
	Parallel       bool
	UpdateRevision string
	// Order, when set (unorderedUpdate.priorityStrategy, Parallel only), orders the pods to
	// update; by default the highest ordinal goes first.
	Order func([]*corev1.Pod) []*corev1.Pod
	// Unordered (unorderedUpdate set, Parallel only) makes Partition a count, as OpenKruise's:
	// of the wanted pods, all but Partition are to be updated, the ones already updated (or
	// terminating) counted first and then the old ones in Order, whatever their ordinals.
	// Without it the first Partition positions are kept.
	Unordered bool
	// PreparingUpdateAsUpdate (gate PreparingUpdateAsUpdate; Unordered only): an old pod held
	// in PreparingUpdate by its inPlaceUpdate hook keeps its place among the pods to update,
	// ahead of the Order, so that a change of priorities or partition does not leave it behind.
	PreparingUpdateAsUpdate bool
	// Held, when set, says which old pods the rollout leaves where they are (their in-place
	// update annotations do not decode); they still count as they are.
	Held            func(*corev1.Pod) bool
	MinReadySeconds int32
	Now             time.Time
}

// Rollout is what to do now.
type Rollout struct {
	// Delete are the pods to delete because they carry the specified-delete label; their
	// ordinals are created anew.
	Delete []*corev1.Pod
	// Update are the old pods to bring to the update revision (in place or by recreating them),
	// in the order chosen.
	Update []*corev1.Pod
	// Waiting says why nothing more was chosen; empty when nothing holds the rollout.
	Waiting string
}

// SpecifiedDelete is whether the pod carries apps.kruise.io/specified-delete.
func SpecifiedDelete(pod *corev1.Pod) bool {
	_, ok := pod.Labels[appsv1beta1.SpecifiedDeleteKey]
	return ok
}

// PlanRollout chooses the pods to delete by label and to update, so that the wanted pods not
// available never exceed MaxUnavailable: an available pod is taken only while the unavailable
// pods (missing ones, ones not ready or not available yet, ones being updated) are fewer, and a
// pod already unavailable is taken without cost, since updating it takes nothing more away
// (OpenKruise #2285: availability is held at replicas - maxUnavailable for the whole rollout,
// each pod's turn coming as soon as another one is available again, not batch by batch).
// OrderedReady sets update one pod at a time, the highest ordinal first, and only while every
// other wanted pod is available, as the built-in StatefulSet does (see orderedRollout).
func PlanRollout(in RolloutInput) Rollout {
	available := func(pod *corev1.Pod) bool {
		return pod != nil && !Terminating(pod) && podstate.Available(pod, in.MinReadySeconds, in.Now)
	}
	unavailable := in.Missing
	for _, s := range in.Slots {
		if !available(s.Pod) {
			unavailable++
		}
	}
	var specified, old []*corev1.Pod
	if in.Parallel && in.Unordered {
		specified, old = unorderedChoice(in)
	} else {
		for i := len(in.Slots) - 1; i >= 0; i-- {
			pod := in.Slots[i].Pod
			if pod == nil || Terminating(pod) || Finished(pod) {
				continue
			}
			if SpecifiedDelete(pod) {
				specified = append(specified, pod)
				continue
			}
			if in.Rolling && in.Slots[i].Position >= in.Partition && podstate.Revision(pod) != in.UpdateRevision && (in.Held == nil || !in.Held(pod)) {
				old = append(old, pod)
			}
		}
		if in.Parallel && in.Order != nil && len(old) > 1 {
			old = in.Order(old)
		}
	}
	var out Rollout
	if !in.Parallel {
		return orderedRollout(specified, old, unavailable, available)
	}
	budget := max(in.MaxUnavailable, 1) - unavailable
	take := func(pod *corev1.Pod) bool {
		if !available(pod) {
			return true
		}
		if budget > 0 {
			budget--
			return true
		}
		out.Waiting = "maxUnavailable reached"
		return false
	}
	for _, pod := range specified {
		if take(pod) {
			out.Delete = append(out.Delete, pod)
		}
	}
	for _, pod := range old {
		if take(pod) {
			out.Update = append(out.Update, pod)
		}
	}
	return out
}

// unorderedChoice is PlanRollout's choice for Unordered: the pods asked to go by label, and the
// old pods to update, in order. Of the wanted pods, all but Partition are to be at the update
// revision: those already there and those terminating count first (a terminating pod is
// replaced at a revision of its own), then, under PreparingUpdateAsUpdate, old pods in
// PreparingUpdate, then the other old pods from the highest ordinal, in Order when set.
func unorderedChoice(in RolloutInput) (specified, old []*corev1.Pod) {
	updated := 0
	var preparing, waiting []*corev1.Pod
	for i := len(in.Slots) - 1; i >= 0; i-- {
		pod := in.Slots[i].Pod
		switch {
		case pod == nil || Finished(pod):
		case Terminating(pod):
			updated++
		case SpecifiedDelete(pod):
			specified = append(specified, pod)
		case podstate.Revision(pod) == in.UpdateRevision:
			updated++
		case countsAsUpdated(pod, in.UpdateRevision, in.PreparingUpdateAsUpdate):
			preparing = append(preparing, pod)
		default:
			waiting = append(waiting, pod)
		}
	}
	if !in.Rolling {
		return specified, nil
	}
	if in.Order != nil && len(waiting) > 1 {
		waiting = in.Order(waiting)
	}
	room := len(in.Slots) + in.Missing - in.Partition - updated
	for _, pod := range append(preparing, waiting...) {
		if room <= 0 {
			break
		}
		room--
		if in.Held == nil || !in.Held(pod) {
			old = append(old, pod)
		}
	}
	return specified, old
}

// countsAsUpdated is whether the partition of an unordered update counts pod as updated: at the
// update revision or, under PreparingUpdateAsUpdate, held in PreparingUpdate on its way there.
func countsAsUpdated(pod *corev1.Pod, updateRevision string, preparingUpdateAsUpdate bool) bool {
	return podstate.Revision(pod) == updateRevision ||
		preparingUpdateAsUpdate && lifecycle.StateOf(pod) == pub.LifecycleStatePreparingUpdate
}

// orderedRollout is PlanRollout for OrderedReady: one pod at a time. A pod already on its way
// (unavailable: waiting on its preDelete or inPlaceUpdate hook, or broken) is carried on first,
// whatever the other pods, so that a hook released later is always followed up (OpenKruise #1606)
// and a broken old pod is replaced rather than waited for; otherwise the highest old pod is taken
// once every wanted pod is available. Pods asked to go by label come before old ones.
func orderedRollout(specified, old []*corev1.Pod, unavailable int, available func(*corev1.Pod) bool) Rollout {
	var out Rollout
	for _, group := range []struct {
		pods []*corev1.Pod
		into *[]*corev1.Pod
	}{{specified, &out.Delete}, {old, &out.Update}} {
		for _, pod := range group.pods {
			if !available(pod) {
				*group.into = []*corev1.Pod{pod}
				return out
			}
		}
	}
	if len(specified)+len(old) == 0 {
		return out
	}
	if unavailable > 0 {
		out.Waiting = "waiting for every pod to be available"
		return out
	}
	if len(specified) > 0 {
		out.Delete = specified[:1]
	} else {
		out.Update = old[:1]
	}
	return out
}
