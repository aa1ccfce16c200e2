package podorder_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/workload/podorder"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var now = t0.Add(24 * time.Hour)

// Each case varies one criterion (pod gives every pod its own node, so
// the same-node rank is 0 unless a case shares a node).
func TestForDeletionEachCriterion(t *testing.T) {
	cases := []struct {
		name string
		pods []*corev1.Pod
		want []string
	}{{
		name: "not scheduled first",
		pods: []*corev1.Pod{pod("a"), pod("b", onNode(""), gen.SetPodPhase(corev1.PodPending), notReady())},
		want: []string{"b", "a"},
	}, {
		name: "Pending, then Unknown, then Running; other phases count as Pending",
		pods: []*corev1.Pod{
			pod("a", gen.SetPodPhase(corev1.PodRunning)),
			pod("b", gen.SetPodPhase(corev1.PodUnknown)),
			pod("c", gen.SetPodPhase(corev1.PodPending)),
			pod("d", gen.SetPodPhase(corev1.PodFailed)),
		},
		want: []string{"c", "d", "b", "a"},
	}, {
		name: "not ready first; no PodReady condition is not ready",
		pods: []*corev1.Pod{
			pod("a"),
			pod("b", notReady()),
			pod("c", func(p *corev1.Pod) { p.Status.Conditions = nil }),
		},
		want: []string{"b", "c", "a"},
	}, {
		name: "lower pod-deletion-cost first; not a canonical int32 counts as 0",
		pods: []*corev1.Pod{
			pod("a", cost("10")),
			pod("b", cost("-5")),
			pod("c"),
			pod("d", cost("+3")),
			pod("e", cost("007")),
			pod("f", cost("2147483648")),
			pod("g", cost("")),
			pod("h", cost("1")),
			pod("i", cost("0")),
		},
		want: []string{"b", "c", "d", "e", "f", "g", "i", "h", "a"},
	}, {
		name: "more pods on the same node first, levelling the nodes",
		pods: []*corev1.Pod{
			pod("a1", onNode("node-a")), pod("a2", onNode("node-a")), pod("a3", onNode("node-a")),
			pod("b1", onNode("node-b")), pod("b2", onNode("node-b")),
			pod("c1", onNode("node-c")),
		},
		// Ranks: a1 2, a2 1, a3 0; b1 1, b2 0; c1 0.
		want: []string{"a1", "a2", "b1", "a3", "b2", "c1"},
	}, {
		name: "ready for less time first; an unknown ready time first of all",
		pods: []*corev1.Pod{
			pod("a", readySince(t0)),
			pod("b", readySince(t0.Add(time.Hour))),
			pod("c", readySince(time.Time{})),
		},
		want: []string{"c", "b", "a"},
	}, {
		name: "ready times are capped at now",
		pods: []*corev1.Pod{
			pod("a", readySince(now)),
			pod("b", readySince(now.Add(time.Hour))),
		},
		want: []string{"a", "b"},
	}, {
		name: "more restarts first, then more sidecar restarts",
		pods: []*corev1.Pod{
			pod("a", restarts(1)),
			pod("b", restarts(3)),
			pod("c", restarts(1), sidecarRestarts(2)),
			pod("d"),
		},
		want: []string{"b", "c", "a", "d"},
	}, {
		name: "newer first; an unknown creation time first of all",
		pods: []*corev1.Pod{
			pod("a", gen.SetPodCreationTimestamp(t0)),
			pod("b", gen.SetPodCreationTimestamp(t0.Add(time.Minute))),
			pod("c", gen.SetPodCreationTimestamp(time.Time{})),
		},
		want: []string{"c", "b", "a"},
	}, {
		name: "equal pods by name, then namespace",
		pods: []*corev1.Pod{pod("b"), pod("a", gen.SetPodNamespace("z")), pod("a", gen.SetPodNamespace("y"))},
		want: []string{"a", "a", "b"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range rotations(tc.pods) {
				assert.Equal(t, tc.want, names(podorder.ForDeletion(in, now)), "input %v", names(in))
			}
		})
	}
}

func TestForDeletionTieBreakIncludesNamespace(t *testing.T) {
	y, z := pod("a", gen.SetPodNamespace("y")), pod("a", gen.SetPodNamespace("z"))
	for _, in := range [][]*corev1.Pod{{y, z}, {z, y}} {
		got := podorder.ForDeletion(in, now)
		assert.Same(t, y, got[0])
		assert.Same(t, z, got[1])
	}
}

// Each case is two pods where first wins on one criterion and loses on
// every criterion after it: the earlier criterion must decide.
func TestForDeletionCriteriaPrecedence(t *testing.T) {
	young := []gen.PodModifier{readySince(t0.Add(time.Hour)), restarts(5), gen.SetPodCreationTimestamp(t0.Add(time.Hour))}
	with := func(mods ...gen.PodModifier) []gen.PodModifier {
		return append(append([]gen.PodModifier{}, young...), mods...)
	}
	cases := []struct {
		name          string
		pods          []*corev1.Pod
		first, second string
	}{{
		name: "not scheduled over phase",
		pods: []*corev1.Pod{
			pod("first", onNode(""), gen.SetPodPhase(corev1.PodRunning)),
			pod("second", with(gen.SetPodPhase(corev1.PodPending), notReady(), cost("-100"))...),
		},
		first: "first", second: "second",
	}, {
		name: "phase over readiness",
		pods: []*corev1.Pod{
			pod("first", gen.SetPodPhase(corev1.PodPending)),
			pod("second", with(gen.SetPodPhase(corev1.PodRunning), notReady(), cost("-100"))...),
		},
		first: "first", second: "second",
	}, {
		name: "readiness over pod-deletion-cost",
		pods: []*corev1.Pod{
			pod("first", notReady(), cost("100")),
			pod("second", with(cost("-100"))...),
		},
		first: "first", second: "second",
	}, {
		name: "pod-deletion-cost over rank",
		pods: []*corev1.Pod{
			pod("crowded1", onNode("node-a"), cost("5")),
			pod("crowded2", onNode("node-a"), cost("5")),
			pod("crowded3", onNode("node-a"), cost("5")),
			pod("first", onNode("node-b"), cost("-1")),
		},
		first: "first", second: "crowded1",
	}, {
		name: "rank over ready time, restarts and age",
		pods: []*corev1.Pod{
			pod("first", onNode("node-a")),
			pod("partner", onNode("node-a")), // equal to first; the name gives first rank 1,
			pod("second", with(onNode("node-b"))...),
		},
		first: "first", second: "second",
	}, {
		name: "ready time over restarts",
		pods: []*corev1.Pod{
			pod("first", readySince(t0.Add(time.Hour))),
			pod("second", restarts(9), gen.SetPodCreationTimestamp(t0.Add(time.Hour))),
		},
		first: "first", second: "second",
	}, {
		name: "restarts over age",
		pods: []*corev1.Pod{
			pod("first", restarts(1)),
			pod("second", gen.SetPodCreationTimestamp(t0.Add(time.Hour))),
		},
		first: "first", second: "second",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range rotations(tc.pods) {
				got := podorder.ForDeletion(in, now)
				assert.Less(t, indexOf(got, tc.first), indexOf(got, tc.second), "order %v", names(got))
			}
		})
	}
}

func TestDeletionOrderAvailable(t *testing.T) {
	pods := []*corev1.Pod{
		pod("available-not-ready", notReady(), labels("available", "true")),
		pod("unavailable-ready", cost("100")),
		pod("available-ready", labels("available", "true")),
	}
	order := podorder.DeletionOrder{
		Now:       now,
		Available: func(p *corev1.Pod) bool { return p.Labels["available"] == "true" },
	}
	assert.Equal(t, []string{"unavailable-ready", "available-not-ready", "available-ready"}, names(order.Sort(pods)))
	// Without the function, readiness decides.
	assert.Equal(t, []string{"available-not-ready", "available-ready", "unavailable-ready"}, names(podorder.ForDeletion(pods, now)))
}

func TestForDeletionLeavesInputAlone(t *testing.T) {
	pods := []*corev1.Pod{
		pod("c"), pod("a", onNode("n"), notReady()), pod("b", onNode("n"), cost("3")), pod("d", onNode("")),
	}
	assertUnchanged(t, pods, func(p []*corev1.Pod) { podorder.ForDeletion(p, now) })
	order := podorder.DeletionOrder{
		Now:               now,
		Available:         func(*corev1.Pod) bool { return true },
		SpreadConstraints: []corev1.TopologySpreadConstraint{{TopologyKey: corev1.LabelTopologyZone}},
		Nodes:             nodesInZones(map[string]string{"n": "z1", "node-c": "z2"}),
	}
	assertUnchanged(t, pods, func(p []*corev1.Pod) { order.Sort(p) })
}

func TestForDeletionEmpty(t *testing.T) {
	assert.Empty(t, podorder.ForDeletion(nil, now))
}
