package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestPlanScale(t *testing.T) {
	p := func(o int, s podState) *corev1.Pod { return testPod("web", o, s, "r1") }
	cases := []struct {
		name       string
		wanted     []int
		pods       []*corev1.Pod
		parallel   bool
		scaleMax   int
		wantCreate []int
		wantDelete []string
		waiting    bool
		limited    int
	}{
		{name: "ordered: empty set creates ordinal 0 only", wanted: []int{0, 1, 2}, wantCreate: []int{0}},
		{name: "ordered: next ordinal once predecessors are healthy", wanted: []int{0, 1, 2},
			pods: []*corev1.Pod{p(0, healthy)}, wantCreate: []int{1}},
		{name: "ordered: waits on a pending predecessor", wanted: []int{0, 1, 2},
			pods: []*corev1.Pod{p(0, healthy), p(1, pending)}, waiting: true},
		{name: "ordered: waits on a not-ready predecessor", wanted: []int{0, 1, 2},
			pods: []*corev1.Pod{p(0, notReady)}, waiting: true},
		{name: "ordered: a gap is filled in order", wanted: []int{0, 1, 2},
			pods: []*corev1.Pod{p(0, healthy), p(2, healthy)}, wantCreate: []int{1}},
		{name: "ordered: failed pod deleted to be recreated", wanted: []int{0, 1},
			pods: []*corev1.Pod{p(0, healthy), p(1, failed)}, wantDelete: []string{"web-1"}},
		{name: "ordered: waits while a recreated pod terminates", wanted: []int{0, 1},
			pods: []*corev1.Pod{p(0, terminating), p(1, healthy)}, waiting: true},
		{name: "ordered: scale down deletes the highest ordinal only", wanted: []int{0},
			pods: []*corev1.Pod{p(0, healthy), p(1, healthy), p(2, healthy)}, wantDelete: []string{"web-2"}},
		{name: "ordered: scale down waits for the previous deletion", wanted: []int{0},
			pods: []*corev1.Pod{p(0, healthy), p(1, healthy), p(2, terminating)}, waiting: true},
		{name: "ordered: scale down waits while a wanted pod is unhealthy", wanted: []int{0},
			pods: []*corev1.Pod{p(0, notReady), p(1, healthy)}, waiting: true},
		{name: "ordered: an unhealthy condemned pod that is the first unhealthy goes", wanted: []int{0},
			pods: []*corev1.Pod{p(0, healthy), p(1, healthy), p(2, notReady)}, wantDelete: []string{"web-2"}},
		{name: "ordered: a healthy higher pod waits on a lower unhealthy one", wanted: []int{0},
			pods: []*corev1.Pod{p(0, healthy), p(1, notReady), p(2, notReady)}, waiting: true},
		{name: "ordered: a pod in PreparingDelete is carried on behind a lower unhealthy one", wanted: []int{0},
			pods: []*corev1.Pod{p(0, healthy), p(1, notReady), preparing(p(2, healthy), "PreparingDelete")}, wantDelete: []string{"web-2"}},
		{name: "ordered: start moved up deletes old ordinals after creating", wanted: []int{3, 4},
			pods: []*corev1.Pod{p(0, healthy), p(1, healthy)}, wantCreate: []int{3}},
		{name: "ordered: start moved up, new pods healthy, old ones go highest first", wanted: []int{3, 4},
			pods: []*corev1.Pod{p(0, healthy), p(1, healthy), p(3, healthy), p(4, healthy)}, wantDelete: []string{"web-1"}},
		{name: "ordered: reserved ordinals skipped", wanted: []int{0, 2},
			pods: []*corev1.Pod{p(0, healthy)}, wantCreate: []int{2}},
		{name: "ordered: a reserved ordinal's pod is removed", wanted: []int{0, 2},
			pods: []*corev1.Pod{p(0, healthy), p(1, healthy), p(2, healthy)}, wantDelete: []string{"web-1"}},
		{name: "parallel: creates all at once", wanted: []int{0, 1, 2}, parallel: true, wantCreate: []int{0, 1, 2}},
		{name: "parallel: does not wait on unhealthy pods", wanted: []int{0, 1, 2}, parallel: true,
			pods: []*corev1.Pod{p(0, pending)}, wantCreate: []int{1, 2}},
		{name: "parallel: deletes every condemned pod", wanted: []int{0}, parallel: true,
			pods: []*corev1.Pod{p(0, healthy), p(1, notReady), p(2, healthy), p(3, terminating)}, wantDelete: []string{"web-2", "web-1"}},
		{name: "parallel: scaleStrategy.maxUnavailable bounds creations", wanted: []int{0, 1, 2, 3, 4}, parallel: true, scaleMax: 2,
			pods: []*corev1.Pod{p(0, pending)}, wantCreate: []int{1}, waiting: true, limited: 3},
		{name: "parallel: maxUnavailable 100% creates all (OpenKruise #1134)", wanted: []int{0, 1, 2}, parallel: true, scaleMax: 3,
			wantCreate: []int{0, 1, 2}},
		{name: "parallel: failed pods first, then the rest", wanted: []int{0, 1}, parallel: true,
			pods: []*corev1.Pod{p(0, failed), p(1, healthy), p(2, healthy)}, wantDelete: []string{"web-0"}},
		{name: "nothing to do", wanted: []int{0, 1}, pods: []*corev1.Pod{p(0, healthy), p(1, healthy)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanScale(ScaleInput{Set: "web", Wanted: wantedOf(tc.wanted), Pods: tc.pods, Parallel: tc.parallel,
				ScaleMaxUnavailable: tc.scaleMax, Now: t0})
			if tc.wantCreate == nil {
				tc.wantCreate = []int(nil)
			}
			assert.Equal(t, tc.wantCreate, got.Create, "create")
			if tc.wantDelete == nil {
				tc.wantDelete = []string{}
			}
			assert.Equal(t, tc.wantDelete, names(got.Delete), "delete")
			assert.Equal(t, tc.waiting, got.Waiting != "", "waiting: %q", got.Waiting)
			assert.Equal(t, tc.limited, got.Limited, "limited")
		})
	}
}

// TestPlanScaleOrderedRunsToCompletion drives an OrderedReady set from nothing to 3 pods and
// back to 1, making each created pod healthy and each deleted pod gone, and checks the order.
func TestPlanScaleOrderedRunsToCompletion(t *testing.T) {
	pods := map[int]*corev1.Pod{}
	list := func() []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range pods {
			out = append(out, p)
		}
		return out
	}
	var created []int
	var deleted []string
	run := func(wanted []int) {
		for i := 0; i < 20; i++ {
			plan := PlanScale(ScaleInput{Set: "web", Wanted: wantedOf(wanted), Pods: list(), Now: t0})
			if plan.Empty() {
				return
			}
			assert.LessOrEqual(t, len(plan.Create)+len(plan.Delete), 1, "one change at a time")
			for _, o := range plan.Create {
				created = append(created, o)
				pods[o] = testPod("web", o, healthy, "r1")
			}
			for _, p := range plan.Delete {
				deleted = append(deleted, p.Name)
				o, _ := OrdinalOf("web", p.Name)
				delete(pods, o)
			}
		}
		t.Fatal("did not settle")
	}
	run([]int{0, 1, 2})
	run([]int{0})
	assert.Equal(t, []int{0, 1, 2}, created)
	assert.Equal(t, []string{"web-2", "web-1"}, deleted)
}
