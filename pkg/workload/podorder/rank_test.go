package podorder_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

func zoneSpread() []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1}}
}

func TestDeletionOrderTopologyRank(t *testing.T) {
	// Zone z1 holds three pods, one per node; zone z2 two pods on one node.
	// By node alone z2's node is the crowded one; by zone, z1 is.
	nodes := nodesInZones(map[string]string{"n1": "z1", "n2": "z1", "n3": "z1", "n4": "z2"})
	pods := []*corev1.Pod{
		pod("p1", onNode("n1")), pod("p2", onNode("n2")), pod("p3", onNode("n3")),
		pod("q1", onNode("n4")), pod("q2", onNode("n4")),
	}
	cases := []struct {
		name  string
		order podorder.DeletionOrder
		want  []string
	}{{
		name:  "same-node rank without constraints",
		order: podorder.DeletionOrder{Now: now, Nodes: nodes},
		want:  []string{"q1", "p1", "p2", "p3", "q2"},
	}, {
		name:  "same-node rank when the nodes are unknown",
		order: podorder.DeletionOrder{Now: now, SpreadConstraints: zoneSpread()},
		want:  []string{"q1", "p1", "p2", "p3", "q2"},
	}, {
		// Zone ranks: p1 2, p2 1, p3 0; q1 1, q2 0. q1 ties p2 on zone rank
		// and wins on node rank.
		name:  "zone rank first, node rank within it",
		order: podorder.DeletionOrder{Now: now, SpreadConstraints: zoneSpread(), Nodes: nodes},
		want:  []string{"p1", "q1", "p2", "p3", "q2"},
	}, {
		name: "a constraint repeated counts once",
		order: podorder.DeletionOrder{
			Now: now, Nodes: nodes,
			SpreadConstraints: append(zoneSpread(), zoneSpread()...),
		},
		want: []string{"p1", "q1", "p2", "p3", "q2"},
	}, {
		// Hostname domains are the nodes: the same ranks again, counted
		// once more, so the same order as by node alone.
		name: "hostname key",
		order: podorder.DeletionOrder{
			Now: now, Nodes: nodes,
			SpreadConstraints: []corev1.TopologySpreadConstraint{{TopologyKey: corev1.LabelHostname}},
		},
		want: []string{"q1", "p1", "p2", "p3", "q2"},
	}, {
		name: "a key no node has changes nothing",
		order: podorder.DeletionOrder{
			Now: now, Nodes: nodes,
			SpreadConstraints: []corev1.TopologySpreadConstraint{{TopologyKey: "example.com/rack"}},
		},
		want: []string{"q1", "p1", "p2", "p3", "q2"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range rotations(pods) {
				assert.Equal(t, tc.want, names(tc.order.Sort(in)), "input %v", names(in))
			}
		})
	}
}

// Scaling in by k pods at a time from the front levels the zones.
func TestDeletionOrderTopologyLevelsZones(t *testing.T) {
	nodes := nodesInZones(map[string]string{"a1": "za", "a2": "za", "b1": "zb", "c1": "zc"})
	var pods []*corev1.Pod
	for _, spec := range []struct {
		node string
		n    int
	}{{"a1", 3}, {"a2", 3}, {"b1", 2}, {"c1", 1}} {
		for i := range spec.n {
			pods = append(pods, pod(spec.node+"-"+string(rune('0'+i)), onNode(spec.node)))
		}
	}
	order := podorder.DeletionOrder{Now: now, SpreadConstraints: zoneSpread(), Nodes: nodes}
	got := order.Sort(pods)
	// Nine pods: za 6 (3 per node), zb 2, zc 1. Taking the first five
	// leaves two in za, one on each of its nodes, and one in zb and zc.
	left := map[string]int{}
	perNode := map[string]int{}
	for _, p := range got[5:] {
		left[nodes[p.Spec.NodeName].Labels[corev1.LabelTopologyZone]]++
		perNode[p.Spec.NodeName]++
	}
	assert.Equal(t, map[string]int{"za": 2, "zb": 1, "zc": 1}, left, "order %v", names(got))
	assert.Equal(t, map[string]int{"a1": 1, "a2": 1, "b1": 1, "c1": 1}, perNode, "order %v", names(got))
}

// A pod on a node the getter cannot find is in no zone: it gains no zone
// rank, and its node rank still counts.
func TestDeletionOrderTopologyUnknownNode(t *testing.T) {
	nodes := nodesInZones(map[string]string{"n1": "z1", "n2": "z1"})
	pods := []*corev1.Pod{
		pod("p1", onNode("n1")), pod("p2", onNode("n2")),
		pod("gone1", onNode("gone")), pod("gone2", onNode("gone")),
	}
	order := podorder.DeletionOrder{Now: now, SpreadConstraints: zoneSpread(), Nodes: nodes}
	// Zone ranks: p1 1, p2 0. Node ranks: gone1 1, gone2 0, p1 0, p2 0.
	assert.Equal(t, []string{"p1", "gone1", "gone2", "p2"}, names(order.Sort(pods)))
}
