package gen

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// NodePodProbeModifier changes a NodePodProbe.
type NodePodProbeModifier func(*appsv1alpha1.NodePodProbe)

// NodePodProbe is a NodePodProbe named name (its node's name), changed by mods in order.
func NodePodProbe(name string, mods ...NodePodProbeModifier) *appsv1alpha1.NodePodProbe {
	return apply(&appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

func SetNodePodProbeUID(uid types.UID) NodePodProbeModifier {
	return func(n *appsv1alpha1.NodePodProbe) { n.UID = uid }
}

func SetNodePodProbeResourceVersion(rv string) NodePodProbeModifier {
	return func(n *appsv1alpha1.NodePodProbe) { n.ResourceVersion = rv }
}

// AddNodePodProbePod appends a pod's entry to the spec.
func AddNodePodProbePod(p appsv1alpha1.PodProbe) NodePodProbeModifier {
	return func(n *appsv1alpha1.NodePodProbe) { n.Spec.PodProbes = append(n.Spec.PodProbes, p) }
}

func SetNodePodProbeOwnerReferences(refs ...metav1.OwnerReference) NodePodProbeModifier {
	return func(n *appsv1alpha1.NodePodProbe) { n.OwnerReferences = refs }
}

// NodePodProbeFrom is a copy of n changed by mods; n is left as it was.
func NodePodProbeFrom(n *appsv1alpha1.NodePodProbe, mods ...NodePodProbeModifier) *appsv1alpha1.NodePodProbe {
	return apply(n.DeepCopy(), mods)
}
