package podorder

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// ForUpdate returns pods in the order to update them: least active first,
// then stably reordered by priority (nil for none) and spread by scatter,
// and finally with the pods in lifecycle state PreparingUpdate moved to
// the front, keeping their order. pods is left as it was. The error is
// priority's: a selector that does not parse, or both kinds of priority
// set.
func ForUpdate(pods []*corev1.Pod, priority *pub.UpdatePriorityStrategy, scatter pub.UpdateScatterStrategy) ([]*corev1.Pod, error) {
	p, err := NewPriority(priority)
	if err != nil {
		return nil, fmt.Errorf("ordering %d pods for update: %w", len(pods), err)
	}
	ordered := leastActiveFirst(pods)
	ordered = p.Sort(ordered)
	ordered = Scatter(ordered, scatter)
	return preparingUpdateFirst(ordered), nil
}

// leastActiveFirst is the default update order: not scheduled, then
// Pending, Unknown, Running; not ready; ready for less time; more
// restarts; newer; by name. Updating these first costs the least
// availability.
func leastActiveFirst(pods []*corev1.Pod) []*corev1.Pod {
	facts := make([]podFacts, len(pods))
	for i, pod := range pods {
		facts[i] = readFacts(pod)
	}
	slices.SortStableFunc(facts, func(a, b podFacts) int {
		return cmp.Or(
			compareScheduling(&a, &b),
			trueFirst(!a.ready, !b.ready),
			compareAge(&a, &b),
		)
	})
	out := make([]*corev1.Pod, len(facts))
	for i := range facts {
		out[i] = facts[i].pod
	}
	return out
}

// preparingUpdateFirst moves the pods whose in-place update has begun
// (lifecycle state PreparingUpdate) to the front, so that an update the
// workload started is finished before another is begun.
func preparingUpdateFirst(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	var rest []*corev1.Pod
	for _, pod := range pods {
		if pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey]) == pub.LifecycleStatePreparingUpdate {
			out = append(out, pod)
		} else {
			rest = append(rest, pod)
		}
	}
	return append(out, rest...)
}
