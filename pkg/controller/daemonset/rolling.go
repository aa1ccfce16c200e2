package daemonset

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// RollingOptions are the rolling update's numbers, resolved against desiredNumberScheduled.
type RollingOptions struct {
	UpdateRevision  string
	MaxUnavailable  int
	MaxSurge        int
	MinReadySeconds int32
	Now             time.Time
	// Updatable are the nodes the update may touch (UpdatableNodes); nil means every node.
	Updatable sets.Set[string]
	// Held, when set, says which old pods the update leaves where they are (their in-place
	// update annotations do not decode): never replaced, and counted as they are.
	Held func(*corev1.Pod) bool
}

func (o RollingOptions) held(pod *corev1.Pod) bool { return o.Held != nil && o.Held(pod) }

// RollingPlan is one step of a rolling update.
type RollingPlan struct {
	// Replace are old pods to take down now: deleted (Standard), or updated in place.
	Replace []*corev1.Pod
	// Surge names nodes that get a pod of the update revision next to their old one.
	Surge []string
	// Recheck, when positive, is when a new pod becomes available by minReadySeconds: the step
	// after it (deleting the old pod, or taking down the next one) must not wait for an event
	// that will not come (OpenKruise #1012: old pods left running after the new ones were up).
	Recheck time.Duration
}

// PlanRolling decides which nodes move to the update revision now, as the built-in DaemonSet
// controller does. Without surge, old pods that are not available are always replaced (they
// serve nothing), and available ones while fewer than maxUnavailable nodes lack an available
// pod. With surge, a node whose old pod is not available gets its new pod at once, others while
// fewer than maxSurge new pods are not yet available; an old pod is deleted once its node's new
// pod is available (PlanManage does that, as it deletes surplus pods). Only nodes that should
// run the pod count; nodes are taken from the end of their name order, as OpenKruise does.
func PlanRolling(nodes []NodeState, o RollingOptions) RollingPlan {
	var plan RollingPlan
	ordered := slices.Clone(nodes)
	slices.SortFunc(ordered, func(a, b NodeState) int { return cmp.Compare(b.Name, a.Name) })
	updatable := func(n string) bool { return o.Updatable == nil || o.Updatable.Has(n) }
	recheck := func(pod *corev1.Pod) {
		if d := availableIn(pod, o.MinReadySeconds, o.Now); d > 0 && (plan.Recheck == 0 || d < plan.Recheck) {
			plan.Recheck = d
		}
	}
	available := func(pod *corev1.Pod) bool { return Available(pod, o.MinReadySeconds, o.Now) }

	if o.MaxSurge > 0 {
		inUse := 0
		var now, candidates []string
		for _, n := range ordered {
			if n.Gone || !n.Eligibility.ShouldRun {
				continue
			}
			updated, old, ok := PodsOnNode(n.Pods, o.UpdateRevision)
			switch {
			case !ok || old == nil:
			case updated != nil:
				if !available(updated) {
					inUse++
					recheck(updated)
				}
			case !updatable(n.Name), o.held(old):
			case !available(old):
				now = append(now, n.Name)
			default:
				candidates = append(candidates, n.Name)
			}
		}
		room := max(0, o.MaxSurge-inUse)
		plan.Surge = append(now, candidates[:min(room, len(candidates))]...)
		return plan
	}

	unavailable := 0
	var now, candidates []*corev1.Pod
	for _, n := range ordered {
		if n.Gone || !n.Eligibility.ShouldRun {
			continue
		}
		updated, old, ok := PodsOnNode(n.Pods, o.UpdateRevision)
		switch {
		case !ok, updated == nil && old == nil, updated != nil && old != nil:
			unavailable++ // PlanManage creates or deletes here first
		case updated != nil:
			if !available(updated) {
				unavailable++
				recheck(updated)
			}
		case !updatable(n.Name):
		case PreparingDelete(old):
			unavailable++ // already being replaced; its hook holds it
		case o.held(old):
			if !available(old) {
				unavailable++ // left as it is, and not serving
			}
		case !available(old):
			now = append(now, old)
		default:
			candidates = append(candidates, old)
		}
	}
	room := max(0, o.MaxUnavailable-unavailable)
	plan.Replace = append(now, candidates[:min(room, len(candidates))]...)
	return plan
}

// UpdatableNodes are the nodes a rolling update may touch, as OpenKruise chooses them: of the
// nodes that should run the pod, those already updated (or being replaced, or without a pod)
// first, then those with an old pod that the update selector matches (every one when there is
// no selector), each group from the end of the name order; at most len(nodes) − partition of
// them, so partition nodes keep their old pods. An old pod held (nil: none) takes no place: it
// stays old, one of the partition's.
func UpdatableNodes(nodes []NodeState, updateRevision string, partition int, selector labels.Selector, held func(*corev1.Pod) bool) sets.Set[string] {
	ordered := make([]NodeState, 0, len(nodes))
	for _, n := range nodes {
		if !n.Gone && n.Eligibility.ShouldRun {
			ordered = append(ordered, n)
		}
	}
	slices.SortFunc(ordered, func(a, b NodeState) int { return cmp.Compare(b.Name, a.Name) })
	var done, replacing, waiting []string
	for _, n := range ordered {
		updated, old, ok := PodsOnNode(n.Pods, updateRevision)
		switch {
		case !ok || updated != nil:
			done = append(done, n.Name)
		case old == nil || PreparingDelete(old):
			replacing = append(replacing, n.Name)
		case held != nil && held(old):
		case selector == nil || selector.Matches(labels.Set(n.Labels)):
			waiting = append(waiting, n.Name)
		}
	}
	chosen := append(append(done, replacing...), waiting...)
	limit := max(0, len(ordered)-partition)
	return sets.New(chosen[:min(limit, len(chosen))]...)
}

// LimitCreates applies scaleStrategy.partitionedScaling to the nodes that need a pod: with it,
// a node without a pod gets one only while fewer than desired − partition nodes run the update
// revision, first nodes by name; without it every such node gets one.
func LimitCreates(create []string, updatedPods, desired, partition int, partitioned bool) []string {
	if !partitioned {
		return create
	}
	partition = max(0, min(partition, desired))
	n := max(0, desired-updatedPods-partition)
	return create[:min(n, len(create))]
}
