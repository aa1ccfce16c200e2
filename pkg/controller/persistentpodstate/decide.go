package persistentpodstate

import (
	"maps"
	"sort"
	"strconv"
	"strings"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/ordinals"
)

// Workload is what the decision reads of the target StatefulSet.
type Workload struct {
	// Replicas, StartOrdinal and Reserved give the ordinals the workload runs (ordinals.Wanted).
	Replicas     int
	StartOrdinal int
	Reserved     ordinals.Reserved
	// Deleting: the workload has a deletionTimestamp.
	Deleting bool
}

// Pod is what the decision reads of one of the workload's pods.
type Pod struct {
	Name     string
	NodeName string
	Ready    bool
	// Annotations are the pod's annotations when they were read for this pass (AnnotationsToRead);
	// nil otherwise, and then the recorded ones are kept.
	Annotations map[string]string
}

// Input is everything Desired decides from.
type Input struct {
	Spec appsv1alpha1.PersistentPodStateSpec
	// Current are the recorded states (status.podStates).
	Current map[string]appsv1alpha1.PodState
	// Workload is nil when the target does not exist.
	Workload *Workload
	// Pods are the workload's pods (any phase).
	Pods []Pod
	// NodeLabels returns a node's labels; false when the node is not known (deleted, or not yet
	// in the cache).
	NodeLabels func(name string) (map[string]string, bool)
	// ValueExists says whether some node carries label key=value. A recorded value no node
	// carries any more (the node was deleted or relabelled) can never be satisfied: it is
	// dropped from the state, so that a recreated pod is not held Pending for ever.
	ValueExists func(key, value string) bool
}

// TopologyKeys are the node label keys the spec records (required and preferred), sorted.
func TopologyKeys(spec *appsv1alpha1.PersistentPodStateSpec) []string {
	set := map[string]bool{}
	if spec.RequiredPersistentTopology != nil {
		for _, k := range spec.RequiredPersistentTopology.NodeTopologyKeys {
			set[k] = true
		}
	}
	for _, t := range spec.PreferredPersistentTopology {
		for _, k := range t.Preference.NodeTopologyKeys {
			set[k] = true
		}
	}
	return sortedKeys(set)
}

// AnnotationKeys are the pod annotation keys the spec records, sorted.
func AnnotationKeys(spec *appsv1alpha1.PersistentPodStateSpec) []string {
	set := map[string]bool{}
	for _, a := range spec.PersistentPodAnnotations {
		set[a.Key] = true
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	delete(set, "")
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// AnnotationsToRead are the pods whose annotations must be read for this pass (the controller's
// pod cache keeps only kruise's annotations): those recordable (Ready, scheduled) whose placement
// is not recorded yet or changed node, or all recordable ones when the spec changed since the
// status was written (specChanged: the annotation keys may have). None when the spec records no
// annotation. Each placement is thus read once, not at every pass.
func AnnotationsToRead(in Input, specChanged bool) []string {
	if len(in.Spec.PersistentPodAnnotations) == 0 || in.Workload == nil || in.Workload.Deleting {
		return nil
	}
	var out []string
	for _, p := range in.Pods {
		if !recordable(p) {
			continue
		}
		if st, ok := in.Current[p.Name]; !ok || st.NodeName != p.NodeName || specChanged {
			out = append(out, p.Name)
		}
	}
	return out
}

func recordable(p Pod) bool { return p.Ready && p.NodeName != "" }

// Desired is the podStates the status should hold:
//   - none when the workload is missing or being deleted;
//   - each Ready, scheduled pod whose node is known: its node, that node's values of the topology
//     keys, and the selected annotations (read this pass, else those recorded for the same node);
//   - other recorded states kept, restricted to the spec's keys and to values some node still
//     carries; a state left with neither topology nor annotations is dropped;
//   - with retention WhenScaled (the default), a state whose ordinal the workload no longer runs
//     (replicas, start ordinal, reserved ordinals) and whose pod is gone is dropped.
//
// It returns nil for no states. It does not modify in.
func Desired(in Input) map[string]appsv1alpha1.PodState {
	if in.Workload == nil || in.Workload.Deleting {
		return nil
	}
	topo := TopologyKeys(&in.Spec)
	annos := AnnotationKeys(&in.Spec)
	out := map[string]appsv1alpha1.PodState{}
	pods := map[string]bool{}
	for _, p := range in.Pods {
		pods[p.Name] = true
		if !recordable(p) {
			continue
		}
		labels, ok := in.NodeLabels(p.NodeName)
		if !ok {
			continue
		}
		st := appsv1alpha1.PodState{NodeName: p.NodeName, NodeTopologyLabels: pick(labels, topo)}
		if p.Annotations != nil {
			st.Annotations = pick(p.Annotations, annos)
		} else if old, ok := in.Current[p.Name]; ok && old.NodeName == p.NodeName {
			st.Annotations = pick(old.Annotations, annos)
		}
		out[p.Name] = st
	}
	for name, old := range in.Current {
		if _, done := out[name]; done {
			continue
		}
		st := appsv1alpha1.PodState{NodeName: old.NodeName, Annotations: pick(old.Annotations, annos)}
		for k, v := range pick(old.NodeTopologyLabels, topo) {
			if in.ValueExists(k, v) {
				if st.NodeTopologyLabels == nil {
					st.NodeTopologyLabels = map[string]string{}
				}
				st.NodeTopologyLabels[k] = v
			}
		}
		if len(st.NodeTopologyLabels) == 0 && len(st.Annotations) == 0 {
			continue
		}
		out[name] = st
	}
	if in.Spec.PersistentPodStateRetentionPolicy != appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted {
		wanted := ordinals.NewWanted(in.Workload.StartOrdinal, in.Workload.Replicas, in.Workload.Reserved)
		for name := range out {
			o, ok := Ordinal(name)
			if !ok || wanted.Contains(o) || pods[name] {
				continue
			}
			delete(out, name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// pick returns the entries of m under keys; nil when there are none.
func pick(m map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// Ordinal is the ordinal a StatefulSet pod's name ends with ("web-3" is 3); false when it ends
// with none.
func Ordinal(podName string) (int, bool) {
	i := strings.LastIndexByte(podName, '-')
	if i < 0 {
		return 0, false
	}
	o, err := strconv.Atoi(podName[i+1:])
	if err != nil || o < 0 || strconv.Itoa(o) != podName[i+1:] {
		return 0, false
	}
	return o, true
}

// SameStates reports whether two podStates maps are equal, nil and empty alike.
func SameStates(a, b map[string]appsv1alpha1.PodState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x.NodeName != y.NodeName || !maps.Equal(x.NodeTopologyLabels, y.NodeTopologyLabels) || !maps.Equal(x.Annotations, y.Annotations) {
			return false
		}
	}
	return true
}
