package spread

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func zoneNode(zone string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": zone}}}
}

func preferZone(zone string) []corev1.PreferredSchedulingTerm {
	return []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}
}

func requiring(s appsv1alpha1.WorkloadSpreadSubset, zone string) appsv1alpha1.WorkloadSpreadSubset {
	s.RequiredNodeSelectorTerm = &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}
	return s
}

func tolerating(s appsv1alpha1.WorkloadSpreadSubset) appsv1alpha1.WorkloadSpreadSubset {
	s.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	return s
}

func tainted(n *corev1.Node) *corev1.Node {
	n.Spec.Taints = []corev1.Taint{{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	return n
}

func TestAdopt(t *testing.T) {
	withPatch := func(s appsv1alpha1.WorkloadSpreadSubset, patch string) appsv1alpha1.WorkloadSpreadSubset {
		s.Patch = runtime.RawExtension{Raw: []byte(patch)}
		return s
	}
	preferring := func(s appsv1alpha1.WorkloadSpreadSubset, zone string) appsv1alpha1.WorkloadSpreadSubset {
		s.PreferredNodeSelectorTerms = preferZone(zone)
		return s
	}
	tests := []struct {
		name    string
		subsets []appsv1alpha1.WorkloadSpreadSubset
		pod     *corev1.Pod
		node    *corev1.Node
		room    map[string]int32
		want    string // "" not adopted
	}{{
		name: "only a subset whose required term and tolerations admit the pod on its node",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{requiring(subset("a", ""), "x"), requiring(subset("b", ""), "y"),
			requiring(subset("c", ""), "z")},
		pod: newPod("p", ""), node: zoneNode("y"),
		room: map[string]int32{"a": 5, "b": 0, "c": 5},
		want: "b",
	}, {
		name:    "a tainted node needs the subset's toleration",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", ""), tolerating(subset("spot", ""))},
		pod:     newPod("p", ""), node: tainted(zoneNode("x")),
		room: map[string]int32{"a": 5, "spot": 0},
		want: "spot",
	}, {
		name:    "fits no subset: not adopted",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{requiring(subset("a", ""), "x")},
		pod:     newPod("p", ""), node: zoneNode("y"),
		room: map[string]int32{"a": 5},
	}, {
		name:    "the node's preferred score first",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{preferring(subset("a", ""), "x"), preferring(subset("b", ""), "y")},
		pod:     newPod("p", ""), node: zoneNode("y"),
		room: map[string]int32{"a": 5, "b": 0},
		want: "b",
	}, {
		name:    "then the patch the pod already carries",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", ""), withPatch(subset("b", ""), `{"metadata":{"labels":{"pool":"b"}}}`)},
		pod:     newPod("p", "", func(p *corev1.Pod) { p.Labels["pool"] = "b" }), node: zoneNode("x"),
		room: map[string]int32{"a": 5, "b": 0},
		want: "b",
	}, {
		name:    "then room",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", ""), subset("b", "")},
		pod:     newPod("p", ""), node: zoneNode("x"),
		room: map[string]int32{"a": 0, "b": 1},
		want: "b",
	}, {
		name:    "ties to the earlier subset",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", ""), subset("b", "")},
		pod:     newPod("p", ""), node: zoneNode("x"),
		room: map[string]int32{"a": 0, "b": 0},
		want: "a",
	}, {
		name:    "an unknown node: not adopted",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", "")},
		pod:     newPod("p", ""),
		room:    map[string]int32{"a": 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWS("Deployment", tt.subsets...)
			got, err := Adopt(ws, []*corev1.Pod{tt.pod}, func(string) *corev1.Node { return tt.node }, tt.room)
			require.NoError(t, err)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, tt.want, got[0].Subset)
		})
	}
}

func TestAdoptConsumesRoom(t *testing.T) {
	ws := newWS("Deployment", subset("a", "1"), subset("b", "1"))
	pods := []*corev1.Pod{newPod("in-a", "a"), newPod("p1", ""), newPod("p2", ""), newPod("gone", "b", terminating())}
	room, err := Room(ws, pods, 2)
	require.NoError(t, err)
	assert.Equal(t, map[string]int32{"a": 0, "b": 1}, room)
	var cands []*corev1.Pod
	for _, p := range pods {
		if NeedsAdoption(ws, p) {
			cands = append(cands, p)
		}
	}
	require.Len(t, cands, 2)
	got, err := Adopt(ws, cands, func(string) *corev1.Node { return zoneNode("x") }, room)
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "a"}, []string{got[0].Subset, got[1].Subset})
}

func TestAdoptPatch(t *testing.T) {
	s := subset("a", "")
	s.Patch = runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"pool":"a"},"annotations":{"note":"x"}},"spec":{"priorityClassName":"high"}}`)}
	ws := newWS("Deployment", s)
	decode := func(b []byte) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m["metadata"].(map[string]any)
	}
	got, err := Adopt(ws, []*corev1.Pod{newPod("p", "")}, func(string) *corev1.Node { return zoneNode("x") }, map[string]int32{"a": 1})
	require.NoError(t, err)
	m := decode(got[0].Patch)
	assert.Equal(t, "uid-p", m["uid"])
	assert.Equal(t, map[string]any{"pool": "a"}, m["labels"])
	assert.Equal(t, map[string]any{"note": "x", appsv1alpha1.MatchedWorkloadSpreadAnnotation: `{"name":"ws","subset":"a"}`}, m["annotations"])

	ws.Annotations = map[string]string{appsv1alpha1.WorkloadSpreadIgnorePatchExistingPodsAnnotation: "true"}
	got, err = Adopt(ws, []*corev1.Pod{newPod("p", "")}, func(string) *corev1.Node { return zoneNode("x") }, map[string]int32{"a": 1})
	require.NoError(t, err)
	m = decode(got[0].Patch)
	assert.NotContains(t, m, "labels")
	assert.Equal(t, map[string]any{appsv1alpha1.MatchedWorkloadSpreadAnnotation: `{"name":"ws","subset":"a"}`}, m["annotations"])
}

func TestNeedsAdoption(t *testing.T) {
	ws := newWS("Deployment", subset("a", ""))
	assert.True(t, NeedsAdoption(ws, newPod("p", "")))
	// A pod of a subset since removed stays in no subset, as in OpenKruise (its reference case
	// "then deletion subset-b" expects the no-subset cost on such pods).
	assert.False(t, NeedsAdoption(ws, newPod("removed-subset", "z")))
	assert.False(t, NeedsAdoption(ws, newPod("in-a", "a")))
	assert.False(t, NeedsAdoption(ws, newPod("unbound", "", func(p *corev1.Pod) { p.Spec.NodeName = "" })))
	assert.False(t, NeedsAdoption(ws, newPod("done", "", phase(corev1.PodSucceeded))))
}
