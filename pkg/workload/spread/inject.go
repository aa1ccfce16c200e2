package spread

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Inject puts subset's requiredNodeSelectorTerm, preferredNodeSelectorTerms, tolerations and patch on pod
// (the reference's rules) and sets the annotation. podKey is the key the pod was recorded under in
// creatingPods when it had no name (empty otherwise).
func Inject(pod *corev1.Pod, ws *appsv1alpha1.WorkloadSpread, subset *appsv1alpha1.WorkloadSpreadSubset, podKey string) error {
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, subset.Tolerations...)
	if len(subset.PreferredNodeSelectorTerms) > 0 {
		na := nodeAffinity(pod)
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, subset.PreferredNodeSelectorTerms...)
	}
	if subset.RequiredNodeSelectorTerm != nil {
		na := nodeAffinity(pod)
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
		}
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = andTerm(
			na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, subset.RequiredNodeSelectorTerm)
	}
	if len(subset.Patch.Raw) > 0 {
		if err := applyPatch(pod, subset.Patch.Raw); err != nil {
			return fmt.Errorf("subset %q: patch: %w", subset.Name, err)
		}
	}
	return SetMatched(pod, appsv1alpha1.InjectWorkloadSpread{Name: ws.Name, Subset: subset.Name, UID: podKey})
}

func nodeAffinity(pod *corev1.Pod) *corev1.NodeAffinity {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return pod.Spec.Affinity.NodeAffinity
}

// andTerm returns the terms (ORed by the scheduler) with term ANDed into each; term alone when
// there are none.
func andTerm(terms []corev1.NodeSelectorTerm, term *corev1.NodeSelectorTerm) []corev1.NodeSelectorTerm {
	if len(terms) == 0 {
		return []corev1.NodeSelectorTerm{*term.DeepCopy()}
	}
	out := make([]corev1.NodeSelectorTerm, len(terms))
	for i, t := range terms {
		t = *t.DeepCopy()
		t.MatchExpressions = append(t.MatchExpressions, term.DeepCopy().MatchExpressions...)
		t.MatchFields = append(t.MatchFields, term.DeepCopy().MatchFields...)
		out[i] = t
	}
	return out
}

// applyPatch merges the strategic merge patch into pod. A changed priorityClassName clears
// spec.priority: the Priority admission plugin already set it from the old class, and the API
// server refuses a mismatch; it sets it again when it reinvokes after webhooks (OpenKruise #1607).
func applyPatch(pod *corev1.Pod, patch []byte) error {
	orig, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, patch, &corev1.Pod{})
	if err != nil {
		return err
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(merged, out); err != nil {
		return err
	}
	if out.Spec.PriorityClassName != pod.Spec.PriorityClassName {
		out.Spec.Priority = nil
	}
	*pod = *out
	return nil
}

// Fits reports whether a pod already placed (spec.nodeName set or not) satisfies subset's required
// term and tolerations (node labels given) -- used by adoption. The pod's own tolerations count,
// and its own required terms are ANDed with the subset's, as Inject would have made them. Without
// a node only a subset that requires nothing fits.
func Fits(pod *corev1.Pod, node *corev1.Node, subset *appsv1alpha1.WorkloadSpreadSubset) bool {
	if node == nil {
		return subset.RequiredNodeSelectorTerm == nil
	}
	tolerations := append(append([]corev1.Toleration{}, pod.Spec.Tolerations...), subset.Tolerations...)
	if _, untolerated := schedcorev1.FindMatchingUntoleratedTaint(node.Spec.Taints, tolerations, nil); untolerated {
		return false
	}
	if subset.RequiredNodeSelectorTerm == nil {
		return true
	}
	var terms []corev1.NodeSelectorTerm
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	ok, err := schedcorev1.MatchNodeSelectorTerms(node, &corev1.NodeSelector{NodeSelectorTerms: andTerm(terms, subset.RequiredNodeSelectorTerm)})
	return err == nil && ok
}
