package persistentpodstate

import (
	"testing"

	"github.com/stretchr/testify/assert"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/ordinals"
)

const (
	zone = "topology.kubernetes.io/zone"
	host = "kubernetes.io/hostname"
)

var testNodes = map[string]map[string]string{
	"n1": {zone: "z1", host: "n1"},
	"n2": {zone: "z2", host: "n2"},
	"n3": {zone: "z1", host: "n3"},
}

func input(spec appsv1alpha1.PersistentPodStateSpec, current map[string]appsv1alpha1.PodState, w *Workload, pods ...Pod) Input {
	return Input{
		Spec: spec, Current: current, Workload: w, Pods: pods,
		NodeLabels: func(n string) (map[string]string, bool) { l, ok := testNodes[n]; return l, ok },
		ValueExists: func(k, v string) bool {
			for _, l := range testNodes {
				if l[k] == v {
					return true
				}
			}
			return false
		},
	}
}

func requiredSpec(keys ...string) appsv1alpha1.PersistentPodStateSpec {
	return appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: keys},
	}
}

func st(node string, labels map[string]string) appsv1alpha1.PodState {
	return appsv1alpha1.PodState{NodeName: node, NodeTopologyLabels: labels}
}

func TestDesiredRecording(t *testing.T) {
	three := &Workload{Replicas: 3}
	preferred := requiredSpec(host)
	preferred.PreferredPersistentTopology = []appsv1alpha1.PreferredTopologyTerm{{Weight: 50, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone, "absent"}}}}
	tests := []struct {
		name string
		in   Input
		want map[string]appsv1alpha1.PodState
	}{
		{"Ready scheduled pods recorded with every topology key their node has",
			input(preferred, nil, three, Pod{Name: "web-0", NodeName: "n1", Ready: true}, Pod{Name: "web-1", NodeName: "n2", Ready: true}),
			map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{zone: "z1", host: "n1"}), "web-1": st("n2", map[string]string{zone: "z2", host: "n2"})}},
		{"not Ready, unscheduled, or on a node not cached yet: not recorded",
			input(requiredSpec(host), nil, three, Pod{Name: "web-0", NodeName: "n1"}, Pod{Name: "web-1", Ready: true}, Pod{Name: "web-2", NodeName: "n9", Ready: true}),
			nil},
		{"a not Ready pod keeps its recorded state",
			input(requiredSpec(host), map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{host: "n1"})}, three, Pod{Name: "web-0", NodeName: "n2"}),
			map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{host: "n1"})}},
		{"a pod on another node is re-recorded",
			input(requiredSpec(host), map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{host: "n1"})}, three, Pod{Name: "web-0", NodeName: "n2", Ready: true}),
			map[string]appsv1alpha1.PodState{"web-0": st("n2", map[string]string{host: "n2"})}},
		{"a changed key set is re-recorded",
			input(requiredSpec(zone), map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{host: "n1"})}, three, Pod{Name: "web-0", NodeName: "n1", Ready: true}),
			map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{zone: "z1"})}},
		{"workload missing: cleared",
			input(requiredSpec(host), map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{host: "n1"})}, nil),
			nil},
		{"workload deleting: cleared",
			input(requiredSpec(host), map[string]appsv1alpha1.PodState{"web-0": st("n1", map[string]string{host: "n1"})}, &Workload{Replicas: 3, Deleting: true}, Pod{Name: "web-0", NodeName: "n1", Ready: true}),
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Desired(tc.in))
		})
	}
}

func TestDesiredNodeGone(t *testing.T) {
	// n9 was deleted: its hostname value exists on no node, its zone z1 still does (n1, n3).
	current := map[string]appsv1alpha1.PodState{
		"web-0": st("n9", map[string]string{host: "n9", zone: "z1"}),
		"web-1": st("n9", map[string]string{host: "n9"}),
		"web-2": {NodeName: "n9", NodeTopologyLabels: map[string]string{host: "n9"}, Annotations: map[string]string{"ip": "10.0.0.1"}},
	}
	spec := requiredSpec(host, zone)
	spec.PersistentPodAnnotations = []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}}
	got := Desired(input(spec, current, &Workload{Replicas: 3}))
	assert.Equal(t, map[string]appsv1alpha1.PodState{
		// the hostname no node carries is dropped, the zone kept: the pod returns to its zone
		"web-0": st("n9", map[string]string{zone: "z1"}),
		// nothing left: dropped, the recreated pod schedules anywhere
		// annotations are kept (consumers such as IPAM read them), the topology dropped
		"web-2": {NodeName: "n9", Annotations: map[string]string{"ip": "10.0.0.1"}},
	}, got)
}

func TestDesiredRetention(t *testing.T) {
	rec := map[string]appsv1alpha1.PodState{}
	for _, n := range []string{"web-0", "web-1", "web-2", "web-3", "web-4", "web-x"} {
		rec[n] = st("n1", map[string]string{host: "n1"})
	}
	names := func(m map[string]appsv1alpha1.PodState) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	reserved, err := ordinals.Parse(nil)
	assert.NoError(t, err)
	t.Run("WhenScaled drops ordinals beyond replicas whose pods are gone", func(t *testing.T) {
		got := Desired(input(requiredSpec(host), rec, &Workload{Replicas: 2, Reserved: reserved}, Pod{Name: "web-3", NodeName: "n1"}))
		assert.ElementsMatch(t, []string{"web-0", "web-1", "web-3", "web-x"}, names(got))
	})
	t.Run("reserved ordinals and the start ordinal move the range", func(t *testing.T) {
		w := &Workload{Replicas: 2, StartOrdinal: 1, Reserved: ordinals.Reserved{{From: 2, To: 2}}}
		got := Desired(input(requiredSpec(host), rec, w))
		assert.ElementsMatch(t, []string{"web-1", "web-3", "web-x"}, names(got))
	})
	t.Run("WhenDeleted keeps them all", func(t *testing.T) {
		spec := requiredSpec(host)
		spec.PersistentPodStateRetentionPolicy = appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted
		got := Desired(input(spec, rec, &Workload{Replicas: 0}))
		assert.Len(t, got, 6)
	})
}

func TestAnnotations(t *testing.T) {
	spec := requiredSpec(host)
	spec.PersistentPodAnnotations = []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}}
	current := map[string]appsv1alpha1.PodState{
		"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{host: "n1"}, Annotations: map[string]string{"ip": "a"}},
		"web-1": {NodeName: "n1", NodeTopologyLabels: map[string]string{host: "n1"}, Annotations: map[string]string{"ip": "b"}},
	}
	pods := []Pod{{Name: "web-0", NodeName: "n1", Ready: true}, {Name: "web-1", NodeName: "n2", Ready: true}, {Name: "web-2", NodeName: "n3", Ready: true}, {Name: "web-3", NodeName: "n3"}}
	in := input(spec, current, &Workload{Replicas: 4}, pods...)
	// Read once per placement: new or moved pods only, unless the spec changed.
	assert.Equal(t, []string{"web-1", "web-2"}, AnnotationsToRead(in, false))
	assert.Equal(t, []string{"web-0", "web-1", "web-2"}, AnnotationsToRead(in, true))
	assert.Nil(t, AnnotationsToRead(input(requiredSpec(host), current, &Workload{Replicas: 4}, pods...), true), "no annotation keys, nothing read")

	in.Pods[1].Annotations = map[string]string{"ip": "c", "other": "x"}
	in.Pods[2].Annotations = map[string]string{}
	got := Desired(in)
	assert.Equal(t, map[string]string{"ip": "a"}, got["web-0"].Annotations, "not re-read: the recorded value kept")
	assert.Equal(t, map[string]string{"ip": "c"}, got["web-1"].Annotations)
	assert.Nil(t, got["web-2"].Annotations)
}

func TestSteadyStateNoChange(t *testing.T) {
	// The reference compares recorded annotation values to the keys and rebuilds the state at
	// every pass; here a recorded state equals the desired one, so nothing is written.
	spec := requiredSpec(host)
	spec.PersistentPodAnnotations = []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}}
	current := map[string]appsv1alpha1.PodState{"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{host: "n1"}, Annotations: map[string]string{"ip": "a"}}}
	in := input(spec, current, &Workload{Replicas: 1}, Pod{Name: "web-0", NodeName: "n1", Ready: true})
	assert.Empty(t, AnnotationsToRead(in, false))
	assert.True(t, SameStates(current, Desired(in)))
	assert.True(t, SameStates(nil, map[string]appsv1alpha1.PodState{}))
}

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"web-0": 0, "a-b-12": 12} {
		o, ok := Ordinal(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, o)
	}
	for _, name := range []string{"web", "web-", "web-x", "web-01", "web-+1"} {
		_, ok := Ordinal(name)
		assert.False(t, ok, name)
	}
}
