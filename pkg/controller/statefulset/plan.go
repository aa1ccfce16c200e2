package statefulset

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/ordinals"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// ScaleInput is what PlanScale decides from.
type ScaleInput struct {
	// Set is the StatefulSet's name, to read ordinals from pod names.
	Set string
	// Wanted are the ordinals the set runs.
	Wanted ordinals.Wanted
	// Pods are all the set's pods, whatever their state.
	Pods []*corev1.Pod
	// Parallel is podManagementPolicy Parallel; otherwise OrderedReady.
	Parallel bool
	// ScaleMaxUnavailable (Parallel only) bounds the wanted pods not available while creating:
	// a pod is created only while fewer are. 0 means no bound.
	ScaleMaxUnavailable int
	// Burst (Parallel only) bounds the pods created, and those deleted, by one plan; 0 means
	// workers.Burst. OrderedReady makes one change at a time anyway.
	Burst           int
	MinReadySeconds int32
	Now             time.Time
}

// ScalePlan is what to do now; the caller does it and waits for the cache to show it before
// planning again.
type ScalePlan struct {
	// Create are the ordinals to create a pod for, ascending.
	Create []int
	// Delete are the pods to delete: finished pods of wanted ordinals (to be recreated), then
	// pods of ordinals no longer wanted, highest ordinal first.
	Delete []*corev1.Pod
	// Waiting says why the plan stops short (OrderedReady waiting on a pod, or the scale budget
	// spent); empty when nothing holds it.
	Waiting string
	// Limited is how many pods scaleStrategy.maxUnavailable kept from being created.
	Limited int
	// Deferred is how many pods the burst left to create on later passes.
	Deferred int
}

// Empty is whether the plan does nothing.
func (p ScalePlan) Empty() bool { return len(p.Create) == 0 && len(p.Delete) == 0 }

// Finished is whether the pod has stopped for good (Succeeded or Failed, as after an eviction):
// the built-in StatefulSet deletes such a pod so that its ordinal is created anew.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// Terminating is whether the pod is being deleted.
func Terminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// PlanScale decides the creations and deletions that bring the set's pods to its wanted
// ordinals, as the built-in StatefulSet controller does. With OrderedReady a pod is created only
// once every lower ordinal is Running, Ready and available, at most one change is planned per
// pass, and pods are removed from the highest ordinal down, one at a time, only while every wanted
// pod is healthy. With Parallel every change is planned at once, up to a burst of creations
// (also bounded by ScaleMaxUnavailable) and one of deletions. Only the creations planned are
// listed, however many replicas are wanted.
func PlanScale(in ScaleInput) ScalePlan {
	burst := in.Burst
	if burst <= 0 {
		burst = workers.Burst
	}
	// The pods of wanted ordinals, by ordinal and ascending; every other pod is condemned.
	// Nothing here grows with the replicas, only with the pods.
	byOrdinal := map[int]*corev1.Pod{}
	var held []int
	var condemned []*corev1.Pod
	for _, pod := range in.Pods {
		o, ok := OrdinalOf(in.Set, pod.Name)
		if ok && in.Wanted.Contains(o) {
			byOrdinal[o] = pod
			held = append(held, o)
			continue
		}
		condemned = append(condemned, pod)
	}
	sort.Ints(held)
	healthy := func(pod *corev1.Pod) bool {
		return !Terminating(pod) && podstate.Available(pod, in.MinReadySeconds, in.Now)
	}
	var plan ScalePlan
	monotonic := !in.Parallel

	// Finished pods of wanted ordinals go first, so that their ordinals are created anew.
	for _, o := range held {
		pod := byOrdinal[o]
		if Terminating(pod) || !Finished(pod) {
			continue
		}
		plan.Delete = append(plan.Delete, pod)
		if monotonic || len(plan.Delete) == burst {
			return plan
		}
	}

	if monotonic {
		// The lowest wanted ordinal that lacks a healthy pod: created if it has none, waited
		// for otherwise. The walk passes only ordinals that have a pod, and stops at the
		// first that has not.
		for _, o := range in.Wanted.All() {
			pod := byOrdinal[o]
			switch {
			case pod == nil:
				plan.Create = []int{o}
				return plan
			case Terminating(pod):
				plan.Waiting = "waiting for pod " + pod.Name + " to be deleted"
				return plan
			case !healthy(pod):
				plan.Waiting = "waiting for pod " + pod.Name + " to be Running and Ready"
				return plan
			}
		}
	} else {
		unavailable := 0
		for _, o := range held {
			if !healthy(byOrdinal[o]) {
				unavailable++
			}
		}
		// Counted, not listed: a new pod is unavailable until ready, so the budget allows
		// creating as many as it has room for.
		missing := in.Wanted.Len() - len(held)
		allowed := missing
		if in.ScaleMaxUnavailable > 0 {
			allowed = min(missing, max(in.ScaleMaxUnavailable-unavailable, 0))
			if allowed < missing {
				plan.Limited = missing - allowed
				plan.Waiting = "scaleStrategy.maxUnavailable reached"
			}
		}
		n := min(allowed, burst)
		plan.Deferred = allowed - n
		plan.Create = in.Wanted.Missing(func(o int) bool { return byOrdinal[o] != nil }, n)
		if len(plan.Create) == 0 {
			plan.Create = nil
		}
	}
	if in.Parallel && len(plan.Delete) > 0 {
		return plan // finished pods first; condemned pods on the next pass
	}

	// Condemned pods, highest ordinal first (names that are no ordinal of the set first). One
	// already in PreparingDelete is on its way out: it is carried on (its preDelete hook decides
	// when) rather than waited behind a lower unhealthy pod.
	sort.SliceStable(condemned, func(i, j int) bool {
		oi, _ := OrdinalOf(in.Set, condemned[i].Name)
		oj, _ := OrdinalOf(in.Set, condemned[j].Name)
		return oi > oj
	})
	var firstUnhealthy *corev1.Pod // the lowest-ordinal unhealthy condemned pod
	for i := len(condemned) - 1; i >= 0; i-- {
		if !healthy(condemned[i]) {
			firstUnhealthy = condemned[i]
			break
		}
	}
	for _, pod := range condemned {
		if Terminating(pod) {
			if monotonic {
				plan.Waiting = "waiting for pod " + pod.Name + " to be deleted"
				return plan
			}
			continue
		}
		onItsWay := lifecycle.StateOf(pod) == pub.LifecycleStatePreparingDelete
		if monotonic && !healthy(pod) && pod != firstUnhealthy && !onItsWay {
			plan.Waiting = "waiting for pod " + firstUnhealthy.Name + " to be Running and Ready before deleting " + pod.Name
			return plan
		}
		plan.Delete = append(plan.Delete, pod)
		if monotonic || len(plan.Delete) == burst {
			return plan
		}
	}
	return plan
}
