package daemonset

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

func TestPlanRollingWithoutSurge(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name           string
		nodes          []NodeState
		maxUnavailable int
		minReady       int32
		updatable      sets.Set[string]
		replace        []string
		recheck        bool
	}{
		{name: "one at a time, from the end of the name order",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", run, dpod("b1", "b", "v1", ready)), node("c", run, dpod("c1", "c", "v1", ready))},
			maxUnavailable: 1, replace: []string{"c1"}},
		{name: "maxUnavailable 2",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", run, dpod("b1", "b", "v1", ready)), node("c", run, dpod("c1", "c", "v1", ready))},
			maxUnavailable: 2, replace: []string{"c1", "b1"}},
		{name: "a new pod not yet ready uses the budget",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", run, dpod("b2", "b", "v2"))},
			maxUnavailable: 1},
		{name: "a node without a pod uses the budget",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", run)},
			maxUnavailable: 1},
		{name: "unavailable old pods are replaced whatever the budget",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1")), node("b", run, dpod("b1", "b", "v1")), node("c", run)},
			maxUnavailable: 1, replace: []string{"b1", "a1"}},
		{name: "minReadySeconds: a ready new pod not yet available holds the next and asks for a recheck",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", run, dpod("b2", "b", "v2", readyAt(now.Add(-5*time.Second))))},
			maxUnavailable: 1, minReady: 30, recheck: true},
		{name: "a pod in PreparingDelete is being replaced: it uses the budget",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", run, dpod("b1", "b", "v1", ready, preparingDelete))},
			maxUnavailable: 1},
		{name: "nodes outside the updatable set are left alone",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", run, dpod("b1", "b", "v1", ready))},
			maxUnavailable: 1, updatable: sets.New("a"), replace: []string{"a1"}},
		{name: "nodes that should not run the pod are not counted",
			nodes:          []NodeState{node("a", run, dpod("a1", "a", "v1", ready)), node("b", keep, dpod("b1", "b", "v1"))},
			maxUnavailable: 1, replace: []string{"a1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanRolling(tt.nodes, RollingOptions{UpdateRevision: "v2", MaxUnavailable: tt.maxUnavailable, MinReadySeconds: tt.minReady, Now: now, Updatable: tt.updatable})
			assert.ElementsMatch(t, tt.replace, names(p.Replace))
			assert.Empty(t, p.Surge)
			assert.Equal(t, tt.recheck, p.Recheck > 0, "recheck %v", p.Recheck)
		})
	}
}

func TestPlanRollingWithSurge(t *testing.T) {
	now := t0.Add(time.Hour)
	nodes := []NodeState{
		node("a", run, dpod("a1", "a", "v1", ready)),
		node("b", run, dpod("b1", "b", "v1", ready)),
		node("c", run, dpod("c1", "c", "v1")), // not available: gets its new pod at once
		node("d", run, dpod("d1", "d", "v1", ready), dpod("d2", "d", "v2", readyAt(now.Add(-time.Second)))),
	}
	p := PlanRolling(nodes, RollingOptions{UpdateRevision: "v2", MaxSurge: 2, MinReadySeconds: 10, Now: now})
	assert.Equal(t, []string{"c", "b"}, p.Surge, "d's new pod is not available yet and uses one of the two")
	assert.Empty(t, p.Replace)
	assert.Greater(t, p.Recheck, time.Duration(0))
}

func TestUpdatableNodes(t *testing.T) {
	nodes := []NodeState{
		{Name: "a", Eligibility: run, Labels: map[string]string{"canary": "true"}, Pods: []*corev1.Pod{dpod("a1", "a", "v1")}},
		{Name: "b", Eligibility: run, Pods: []*corev1.Pod{dpod("b1", "b", "v1")}},
		{Name: "c", Eligibility: run, Pods: []*corev1.Pod{dpod("c1", "c", "v1")}},
		{Name: "d", Eligibility: run, Pods: []*corev1.Pod{dpod("d2", "d", "v2")}},
		{Name: "e", Eligibility: keep, Pods: []*corev1.Pod{dpod("e1", "e", "v1")}},
	}
	canary := labels.SelectorFromSet(labels.Set{"canary": "true"})
	tests := []struct {
		name      string
		partition int
		selector  labels.Selector
		want      []string
	}{
		{"no partition: all", 0, nil, []string{"a", "b", "c", "d"}},
		{"partition 1: the first node by name keeps the old pod", 1, nil, []string{"b", "c", "d"}},
		{"partition 3: only the updated node", 3, nil, []string{"d"}},
		{"partition beyond the nodes", 9, nil, []string{}},
		{"selector: only matching nodes (and the updated one)", 0, canary, []string{"a", "d"}},
		{"selector and partition", 3, canary, []string{"d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ElementsMatch(t, tt.want, sets.List(UpdatableNodes(nodes, "v2", tt.partition, tt.selector, nil)))
		})
	}
}

func TestLimitCreates(t *testing.T) {
	assert.Equal(t, []string{"a", "b"}, LimitCreates([]string{"a", "b"}, 0, 4, 3, false))
	assert.Equal(t, []string{"a"}, LimitCreates([]string{"a", "b"}, 0, 4, 3, true))
	assert.Empty(t, LimitCreates([]string{"a", "b"}, 1, 4, 3, true))
	assert.Equal(t, []string{"a", "b"}, LimitCreates([]string{"a", "b"}, 0, 4, 0, true))
}

// TestRollingUpdateNeverStalls drives PlanManage and PlanRolling as the controller does, pass
// after pass, on a cluster where a created pod is ready one pass later and a deleted one is gone
// one pass later, with and without surge and with minReadySeconds; every node must end with one
// pod of the update revision and no old pod left (OpenKruise #1012), within a bounded number of
// passes.
func TestRollingUpdateNeverStalls(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		nodes, unavail, surge int
		minReady              int32
		partition             int
	}{
		{"maxUnavailable 1", 7, 1, 0, 0, 0},
		{"maxUnavailable 3", 10, 3, 0, 0, 0},
		{"maxSurge 1", 6, 0, 1, 0, 0},
		{"maxSurge 2 with minReadySeconds", 6, 0, 2, 20, 0},
		{"maxUnavailable 1 with minReadySeconds", 5, 1, 0, 20, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(time.Hour)
			pods := map[string][]*corev1.Pod{}
			for i := 0; i < tc.nodes; i++ {
				n := fmt.Sprintf("n%02d", i)
				pods[n] = []*corev1.Pod{dpod(n+"-old", n, "v1", ready)}
			}
			seq := 0
			for pass := 0; pass < 20*tc.nodes; pass++ {
				var states []NodeState
				for i := 0; i < tc.nodes; i++ {
					n := fmt.Sprintf("n%02d", i)
					states = append(states, node(n, run, pods[n]...))
				}
				// Pods deleted in the last pass are gone; created ones turn ready.
				for n, ps := range pods {
					var kept []*corev1.Pod
					for _, p := range ps {
						if Terminating(p) {
							continue
						}
						if !Ready(p) {
							readyAt(now)(p)
						}
						kept = append(kept, p)
					}
					pods[n] = kept
				}
				done := true
				for _, ps := range pods {
					if len(ps) != 1 || podstate.Revision(ps[0]) != "v2" {
						done = false
					}
				}
				if done {
					return
				}
				m := PlanManage(states, ManageOptions{UpdateRevision: "v2", Surge: tc.surge > 0, MinReadySeconds: tc.minReady, Now: now})
				r := PlanRolling(states, RollingOptions{UpdateRevision: "v2", MaxUnavailable: tc.unavail, MaxSurge: tc.surge, MinReadySeconds: tc.minReady, Now: now})
				for _, p := range append(m.Delete, r.Replace...) {
					terminating(p)
				}
				for _, n := range append(m.Create, r.Surge...) {
					seq++
					pods[n] = append(pods[n], dpod(fmt.Sprintf("%s-new%d", n, seq), n, "v2", createdAt(seq)))
				}
				// Availability never counts old pods going down beyond the budget.
				down := 0
				for _, ps := range pods {
					up := false
					for _, p := range ps {
						up = up || Available(p, tc.minReady, now)
					}
					if !up {
						down++
					}
				}
				if tc.surge > 0 {
					assert.Zero(t, down, "with surge no node is without an available pod")
				}
				// Time moves on by the recheck the plan asked for, else by a second.
				step := time.Second
				if r.Recheck > 0 {
					step = r.Recheck
				}
				now = now.Add(step)
			}
			require.Fail(t, "the rolling update did not finish", "%v", pods)
		})
	}
}
