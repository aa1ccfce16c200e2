package daemonset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestPlanManage(t *testing.T) {
	tests := []struct {
		name               string
		nodes              []NodeState
		surge              bool
		create, del, ended []string
	}{
		{name: "eligible nodes without a pod get one, by name",
			nodes:  []NodeState{node("b", run), node("a", run), node("c", run, dpod("c1", "c", "v1", ready))},
			create: []string{"a", "b"}},
		{name: "NoSchedule-tainted node keeps its pod but gets none",
			nodes: []NodeState{node("a", keep), node("b", keep, dpod("b1", "b", "v1", ready))}},
		{name: "ineligible node loses its pods, terminating ones left alone",
			nodes: []NodeState{node("a", off, dpod("a1", "a", "v1", ready), dpod("a2", "a", "v1", terminating))},
			del:   []string{"a1"}},
		{name: "gone node loses its pods",
			nodes: []NodeState{{Name: "x", Gone: true, Eligibility: run, Pods: []*corev1.Pod{dpod("x1", "x", "v1")}}},
			del:   []string{"x1"}},
		{name: "a node with only a terminating pod waits for it",
			nodes: []NodeState{node("a", run, dpod("a1", "a", "v1", terminating))}},
		{name: "failed and succeeded pods are ended, the node gets a new pod once they are gone",
			nodes: []NodeState{node("a", run, dpod("a1", "a", "v1", phase(corev1.PodFailed))), node("b", run, dpod("b1", "b", "v1", phase(corev1.PodSucceeded)))},
			ended: []string{"a1", "b1"}},
		{name: "surplus pods: the oldest is kept",
			nodes: []NodeState{node("a", run, dpod("a2", "a", "v1", createdAt(5)), dpod("a1", "a", "v1", createdAt(1)), dpod("a3", "a", "v2", createdAt(9)))},
			del:   []string{"a2", "a3"}},
		{name: "surge: old and new kept while the new one is not available",
			nodes: []NodeState{node("a", run, dpod("old", "a", "v1", ready), dpod("new", "a", "v2", createdAt(5)))},
			surge: true},
		{name: "surge: the old pod goes once the new one is available",
			nodes: []NodeState{node("a", run, dpod("old", "a", "v1", ready), dpod("new", "a", "v2", createdAt(5), ready))},
			surge: true, del: []string{"old"}},
		{name: "surge: a not-ready old pod goes at once; a third pod is surplus",
			nodes: []NodeState{node("a", run, dpod("old", "a", "v1"), dpod("new", "a", "v2", createdAt(5)), dpod("new2", "a", "v2", createdAt(6)))},
			surge: true, del: []string{"new2", "old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanManage(tt.nodes, ManageOptions{UpdateRevision: "v2", Surge: tt.surge, Now: t0.Add(time.Hour)})
			if tt.create == nil {
				tt.create = []string{}
			}
			if p.Create == nil {
				p.Create = []string{}
			}
			assert.Equal(t, tt.create, p.Create, "create")
			assert.ElementsMatch(t, tt.del, names(p.Delete), "delete")
			assert.ElementsMatch(t, tt.ended, names(p.Ended), "ended")
		})
	}
}

func TestPodsOnNode(t *testing.T) {
	u, o, ok := PodsOnNode([]*corev1.Pod{dpod("a", "n", "v1"), dpod("b", "n", "v2"), dpod("c", "n", "v1", terminating)}, "v2")
	assert.True(t, ok)
	assert.Equal(t, "b", u.Name)
	assert.Equal(t, "a", o.Name)
	_, _, ok = PodsOnNode([]*corev1.Pod{dpod("a", "n", "v1"), dpod("b", "n", "v1")}, "v2")
	assert.False(t, ok, "two old pods")
}
