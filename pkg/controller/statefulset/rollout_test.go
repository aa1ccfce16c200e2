package statefulset

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

func slots(pods ...*corev1.Pod) []Slot {
	out := make([]Slot, len(pods))
	for i, p := range pods {
		o, _ := OrdinalOf("web", p.Name)
		out[i] = Slot{Ordinal: o, Position: i, Pod: p}
	}
	return out
}

func TestPlanRollout(t *testing.T) {
	old := func(o int, s podState) *corev1.Pod { return testPod("web", o, s, "old") }
	upd := func(o int, s podState) *corev1.Pod { return testPod("web", o, s, "new") }
	cases := []struct {
		name       string
		slots      []Slot
		missing    int
		rolling    bool
		partition  int
		maxUnavail int
		parallel   bool
		wantUpdate []string
		wantDelete []string
	}{
		{name: "ordered: highest ordinal first, one at a time", rolling: true,
			slots: slots(old(0, healthy), old(1, healthy), old(2, healthy)), wantUpdate: []string{"web-2"}},
		{name: "ordered: waits until the updated pod is available", rolling: true,
			slots: slots(old(0, healthy), old(1, healthy), upd(2, notReady))},
		{name: "ordered: partition keeps the lowest pods", rolling: true, partition: 2,
			slots: slots(old(0, healthy), old(1, healthy), upd(2, healthy))},
		{name: "ordered: partition counts wanted ordinals only (reserved skipped)", rolling: true, partition: 1,
			slots: []Slot{{Ordinal: 0, Position: 0, Pod: old(0, healthy)}, {Ordinal: 2, Position: 1, Pod: old(2, healthy)},
				{Ordinal: 5, Position: 2, Pod: upd(5, healthy)}},
			wantUpdate: []string{"web-2"}},
		{name: "ordered: waits on an unavailable pod below the partition", rolling: true, partition: 1,
			slots: slots(old(0, notReady), old(1, healthy), old(2, healthy))},
		{name: "ordered: carries on a pod on its way (hook held, then released) whatever the others", rolling: true,
			slots: slots(old(0, healthy), upd(1, notReady), preparing(old(2, healthy), "PreparingUpdate")), wantUpdate: []string{"web-2"}},
		{name: "ordered: a broken old pod is replaced, not waited for", rolling: true,
			slots: slots(old(0, healthy), old(1, healthy), old(2, notReady)), wantUpdate: []string{"web-2"}},
		{name: "ordered: a pod on its way out by label is carried on", rolling: false,
			slots: slots(old(0, notReady), preparing(specifiedDelete(old(1, healthy)), "PreparingDelete")), wantDelete: []string{"web-1"}},
		{name: "OnDelete or paused: nothing", rolling: false,
			slots: slots(old(0, healthy), old(1, healthy))},
		{name: "specified delete works without a rolling update", rolling: false,
			slots: slots(old(0, healthy), specifiedDelete(old(1, healthy))), wantDelete: []string{"web-1"}},
		{name: "parallel: maxUnavailable pods at once", rolling: true, parallel: true, maxUnavail: 2,
			slots: slots(old(0, healthy), old(1, healthy), old(2, healthy), old(3, healthy)), wantUpdate: []string{"web-3", "web-2"}},
		{name: "parallel: an unavailable updated pod takes budget (#2285)", rolling: true, parallel: true, maxUnavail: 2,
			slots: slots(old(0, healthy), old(1, healthy), old(2, healthy), upd(3, notReady)), wantUpdate: []string{"web-2"}},
		{name: "parallel: a missing pod takes budget", rolling: true, parallel: true, maxUnavail: 2,
			slots: []Slot{{Ordinal: 0, Pod: old(0, healthy)}, {Ordinal: 1, Position: 1, Pod: old(1, healthy)}, {Ordinal: 2, Position: 2}}, wantUpdate: []string{"web-1"}},
		{name: "parallel: missing pods counted, not listed, take budget", rolling: true, parallel: true, maxUnavail: 3,
			slots: slots(old(0, healthy), old(1, healthy), old(2, healthy)), missing: 2, wantUpdate: []string{"web-2"}},
		{name: "ordered: a missing pod, counted, holds the rollout", rolling: true,
			slots: slots(old(0, healthy), old(1, healthy)), missing: 1},
		{name: "parallel: unavailable old pods are updated without cost", rolling: true, parallel: true, maxUnavail: 1,
			slots: slots(old(0, healthy), old(1, notReady), old(2, notReady)), wantUpdate: []string{"web-2", "web-1"}},
		{name: "parallel: budget spent, nothing", rolling: true, parallel: true, maxUnavail: 1,
			slots: slots(old(0, healthy), upd(1, pending))},
		{name: "parallel: specified delete shares the budget, first", rolling: true, parallel: true, maxUnavail: 1,
			slots: slots(specifiedDelete(old(0, healthy)), old(1, healthy)), wantDelete: []string{"web-0"}},
		{name: "terminating pods are never chosen", rolling: true, parallel: true, maxUnavail: 3,
			slots: slots(old(0, terminating), old(1, healthy)), wantUpdate: []string{"web-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRollout(RolloutInput{Slots: tc.slots, Missing: tc.missing, Rolling: tc.rolling, Partition: tc.partition, MaxUnavailable: tc.maxUnavail,
				Parallel: tc.parallel, UpdateRevision: "new", Now: t0})
			if tc.wantUpdate == nil {
				tc.wantUpdate = []string{}
			}
			if tc.wantDelete == nil {
				tc.wantDelete = []string{}
			}
			assert.Equal(t, tc.wantUpdate, names(got.Update), "update")
			assert.Equal(t, tc.wantDelete, names(got.Delete), "delete")
		})
	}
}

func preparing(pod *corev1.Pod, state string) *corev1.Pod {
	pod.Labels[pub.LifecycleStateKey] = state
	return pod
}

func TestPlanRolloutOrder(t *testing.T) {
	old := func(o int) *corev1.Pod { return testPod("web", o, healthy, "old") }
	lowestFirst := func(pods []*corev1.Pod) []*corev1.Pod {
		out := make([]*corev1.Pod, len(pods))
		for i := range pods {
			out[len(pods)-1-i] = pods[i]
		}
		return out
	}
	got := PlanRollout(RolloutInput{Slots: slots(old(0), old(1), old(2)), Rolling: true, MaxUnavailable: 1, Parallel: true,
		UpdateRevision: "new", Order: lowestFirst, Now: t0})
	assert.Equal(t, []string{"web-0"}, names(got.Update))
}

// TestPlanRolloutHoldsAvailabilityThroughout simulates Parallel rolling updates (recreate:
// an updated pod is unavailable for a random number of steps) and checks, at every step, that
// the available pods never drop below replicas - maxUnavailable and that each freed slot is used
// at once (OpenKruise #2285), until every pod is updated.
func TestPlanRolloutHoldsAvailabilityThroughout(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, tc := range []struct{ replicas, maxUnavailable, partition int }{{10, 6, 0}, {10, 3, 0}, {7, 1, 0}, {10, 4, 3}} {
		pods := make([]*corev1.Pod, tc.replicas)
		busy := make([]int, tc.replicas) // steps left before pod i is available again
		for i := range pods {
			pods[i] = testPod("web", i, healthy, "old")
		}
		for step := 0; ; step++ {
			if step > 500 {
				t.Fatalf("%+v: rollout did not finish", tc)
			}
			got := PlanRollout(RolloutInput{Slots: slots(pods...), Rolling: true, Partition: tc.partition, MaxUnavailable: tc.maxUnavailable,
				Parallel: true, UpdateRevision: "new", Now: t0})
			for _, p := range got.Update {
				o, _ := OrdinalOf("web", p.Name)
				pods[o] = testPod("web", o, notReady, "new")
				busy[o] = 1 + rng.Intn(4)
			}
			unavailable, oldLeft := 0, 0
			for i, p := range pods {
				if p.Labels["controller-revision-hash"] == "old" && i >= tc.partition {
					oldLeft++
				}
				if busy[i] > 0 {
					unavailable++
				}
			}
			if unavailable > tc.maxUnavailable {
				t.Fatalf("%+v step %d: %d unavailable, more than maxUnavailable", tc, step, unavailable)
			}
			if oldLeft > 0 && unavailable < tc.maxUnavailable && len(got.Update) == 0 {
				t.Fatalf("%+v step %d: budget left (%d unavailable) but no pod chosen", tc, step, unavailable)
			}
			if oldLeft == 0 && unavailable == 0 {
				break
			}
			for i := range busy { // time passes: updated pods become available one by one
				if busy[i] > 0 {
					busy[i]--
					if busy[i] == 0 {
						pods[i] = testPod("web", i, healthy, "new")
					}
				}
			}
		}
		for i, p := range pods {
			want := "new"
			if i < tc.partition {
				want = "old"
			}
			assert.Equal(t, want, p.Labels["controller-revision-hash"], "%+v pod %d", tc, i)
		}
	}
}

// TestPlanRolloutUnordered: with unorderedUpdate, partition counts pods as OpenKruise's does
// (all but partition of the wanted pods are updated, whatever their ordinals), and under
// PreparingUpdateAsUpdate a pod held in PreparingUpdate keeps its place.
func TestPlanRolloutUnordered(t *testing.T) {
	old := func(o int) *corev1.Pod { return testPod("web", o, healthy, "old") }
	upd := func(o int) *corev1.Pod { return testPod("web", o, healthy, "new") }
	preparing := func(o int) *corev1.Pod {
		p := old(o)
		p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingUpdate)
		return p
	}
	// first puts the named pods ahead of the others, keeping the order given otherwise.
	first := func(names ...string) func([]*corev1.Pod) []*corev1.Pod {
		return func(pods []*corev1.Pod) []*corev1.Pod {
			var head, tail []*corev1.Pod
			for _, p := range pods {
				if slices.Contains(names, p.Name) {
					head = append(head, p)
				} else {
					tail = append(tail, p)
				}
			}
			return append(head, tail...)
		}
	}
	cases := []struct {
		name      string
		slots     []Slot
		missing   int
		partition int
		order     func([]*corev1.Pod) []*corev1.Pod
		prepAsUpd bool
		rolling   bool
		want      []string
	}{
		{name: "the priority chooses, not the ordinals", slots: slots(old(0), old(1), old(2), old(3), old(4)), partition: 3,
			order: first("web-1"), rolling: true, want: []string{"web-1", "web-4"}},
		{name: "by default the highest ordinals", slots: slots(old(0), old(1), old(2), old(3), old(4)), partition: 3,
			rolling: true, want: []string{"web-4", "web-3"}},
		{name: "an updated pod counts wherever it is", slots: slots(upd(0), old(1), old(2), old(3), old(4)), partition: 3,
			rolling: true, want: []string{"web-4"}},
		{name: "a missing pod does not count as updated", slots: slots(old(0), old(1), old(2)), missing: 2, partition: 3,
			rolling: true, want: []string{"web-2", "web-1"}},
		{name: "partition reached", slots: slots(old(0), upd(1), upd(2)), partition: 1, rolling: true},
		{name: "PreparingUpdate keeps its place under the gate", slots: slots(preparing(0), old(1), old(2), old(3), old(4)), partition: 4,
			prepAsUpd: true, rolling: true, want: []string{"web-0"}},
		{name: "PreparingUpdate is ordered as any old pod without the gate", slots: slots(preparing(0), old(1), old(2), old(3), old(4)), partition: 4,
			rolling: true, want: []string{"web-4"}},
		{name: "not rolling", slots: slots(old(0), old(1)), rolling: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRollout(RolloutInput{Slots: tc.slots, Missing: tc.missing, Rolling: tc.rolling, Partition: tc.partition,
				MaxUnavailable: 5, Parallel: true, Unordered: true, PreparingUpdateAsUpdate: tc.prepAsUpd, UpdateRevision: "new",
				Order: tc.order, Now: t0})
			want := tc.want
			if want == nil {
				want = []string{}
			}
			assert.Equal(t, want, names(got.Update))
		})
	}
}
