package nodefit

import corev1 "k8s.io/api/core/v1"

// nodeNameField is the node field a per-node pod's required node affinity pins it to.
const nodeNameField = "metadata.name"

// PinToNode makes spec's required node affinity select node by name alone, as the built-in
// DaemonSet controller does: the scheduler then binds the pod to that node and no other. The template's
// own required terms were checked when the node was found eligible, so they are replaced;
// preferred terms and other affinities are kept.
func PinToNode(spec *corev1.PodSpec, node string) {
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
	}}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{term},
	}
}

// TargetNode is the node a per-node pod is for: its spec.nodeName once bound, else the node its
// required affinity pins it to; "" when it names none.
func TargetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range t.MatchFields {
			if r.Key == nodeNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}
