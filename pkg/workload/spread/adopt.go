package spread

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Adoption places a pod that was not admitted into a subset (created before the WorkloadSpread,
// or while kruise's webhook was off) in the subset it already fits.
type Adoption struct {
	Pod    *corev1.Pod
	Subset string
	// Patch is the JSON merge patch that records the subset on the pod (the matched annotation)
	// with the labels and annotations of the subset's patch, unless the WorkloadSpread says not to
	// touch existing pods; its metadata.uid makes it fail on another pod of the same name.
	Patch []byte
}

// NeedsAdoption reports whether pod is a candidate for Adopt: active, bound to a node, and not
// annotated for ws (no annotation, another WorkloadSpread's, or no subset in it).
func NeedsAdoption(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod) bool {
	if !Active(pod) || pod.Spec.NodeName == "" {
		return false
	}
	// A pod this spread placed in a subset since removed is not adopted again (as OpenKruise):
	// it stays in no subset, first to go at scale-in.
	m, ok := Matched(pod)
	return !ok || m.Name != ws.Name || m.Subset == ""
}

// Room is how many more pods each subset takes, counting the active pods annotated for it
// (math.MaxInt32 for a subset without maxReplicas).
func Room(ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod, replicas int32) (map[string]int32, error) {
	room := make(map[string]int32, len(ws.Spec.Subsets))
	for i := range ws.Spec.Subsets {
		s := &ws.Spec.Subsets[i]
		limit, unlimited, err := MaxReplicas(s, replicas)
		if err != nil {
			return nil, err
		}
		if unlimited {
			limit = math.MaxInt32
		}
		room[s.Name] = limit
	}
	for _, p := range pods {
		if s := SubsetOf(ws, p); s != NoSubset && Active(p) {
			room[s]--
		}
	}
	return room, nil
}

// Adopt chooses for each candidate (whole pods, as read from the API server: their affinity,
// tolerations and patched fields matter) the subset it best fits on its node: the subset's
// required term and tolerations must admit it there; among those that do, the highest score
// wins, the earlier on a tie: the node's score for the subset's preferred terms * 100, + 10 when
// the pod already carries the subset's patch, + 1 while the subset has room. room is consumed
// as pods are placed. A pod whose node is unknown or that fits no subset is left out (it counts
// in no subset, and is the first to go at scale-in).
func Adopt(ws *appsv1alpha1.WorkloadSpread, candidates []*corev1.Pod, node func(name string) *corev1.Node, room map[string]int32) ([]Adoption, error) {
	var out []Adoption
	for _, pod := range candidates {
		n := node(pod.Spec.NodeName)
		if n == nil {
			continue
		}
		best, bestScore := -1, int64(-1)
		for i := range ws.Spec.Subsets {
			s := &ws.Spec.Subsets[i]
			if !Fits(pod, n, s) {
				continue
			}
			if score := adoptScore(pod, n, s, room[s.Name]); score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			continue
		}
		s := &ws.Spec.Subsets[best]
		patch, err := adoptPatch(ws, s, pod)
		if err != nil {
			return nil, err
		}
		room[s.Name]--
		out = append(out, Adoption{Pod: pod, Subset: s.Name, Patch: patch})
	}
	return out, nil
}

func adoptScore(pod *corev1.Pod, node *corev1.Node, s *appsv1alpha1.WorkloadSpreadSubset, room int32) int64 {
	var score int64
	if len(s.PreferredNodeSelectorTerms) > 0 {
		if terms, err := nodeaffinity.NewPreferredSchedulingTerms(s.PreferredNodeSelectorTerms); err == nil {
			score = terms.Score(node) * 100
		}
	}
	if patched(pod, s) {
		score += 10
	}
	if room > 0 {
		score++
	}
	return score
}

// patched reports whether pod already carries s's patch: applying it changes nothing but,
// perhaps, annotations (whose values, JSON say, cannot be compared reliably).
func patched(pod *corev1.Pod, s *appsv1alpha1.WorkloadSpreadSubset) bool {
	if len(s.Patch.Raw) == 0 {
		return false
	}
	orig, err := json.Marshal(pod)
	if err != nil {
		return false
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, s.Patch.Raw, &corev1.Pod{})
	if err != nil {
		return false
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(merged, out); err != nil {
		return false
	}
	out.Annotations = pod.Annotations
	return equality.Semantic.DeepEqual(pod, out)
}

// adoptPatch is the metadata patch of an adopted pod.
func adoptPatch(ws *appsv1alpha1.WorkloadSpread, s *appsv1alpha1.WorkloadSpreadSubset, pod *corev1.Pod) ([]byte, error) {
	matched, err := json.Marshal(appsv1alpha1.InjectWorkloadSpread{Name: ws.Name, Subset: s.Name})
	if err != nil {
		return nil, err
	}
	labels, annotations := map[string]any{}, map[string]any{}
	if len(s.Patch.Raw) > 0 && !strings.EqualFold(ws.Annotations[appsv1alpha1.WorkloadSpreadIgnorePatchExistingPodsAnnotation], "true") {
		var p struct {
			Metadata struct {
				Labels      map[string]any `json:"labels"`
				Annotations map[string]any `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(s.Patch.Raw, &p); err != nil {
			return nil, fmt.Errorf("subset %q: reading its patch: %w", s.Name, err)
		}
		for k, v := range p.Metadata.Labels {
			labels[k] = v
		}
		for k, v := range p.Metadata.Annotations {
			annotations[k] = v
		}
	}
	annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation] = string(matched)
	meta := map[string]any{"uid": pod.UID, "annotations": annotations}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	return json.Marshal(map[string]any{"metadata": meta})
}
