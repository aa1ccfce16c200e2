package gen

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeModifier changes a Node.
type NodeModifier func(*corev1.Node)

// Node is a Node named name, changed by mods in order.
func Node(name string, mods ...NodeModifier) *corev1.Node {
	return apply(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// NodeFrom is a copy of n changed by mods; n is left as it was.
func NodeFrom(n *corev1.Node, mods ...NodeModifier) *corev1.Node {
	return apply(n.DeepCopy(), mods)
}

func SetNodeUID(uid types.UID) NodeModifier { return func(n *corev1.Node) { n.UID = uid } }

func SetNodeResourceVersion(rv string) NodeModifier {
	return func(n *corev1.Node) { n.ResourceVersion = rv }
}

// SetNodeLabels replaces the node's labels with a copy of labels (nil and
// empty kept apart).
func SetNodeLabels(labels map[string]string) NodeModifier {
	return func(n *corev1.Node) { n.Labels = maps.Clone(labels) }
}

// AddNodeLabel sets the node's label key to value.
func AddNodeLabel(key, value string) NodeModifier {
	return func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
	}
}

// SetNodeCondition sets the node's condition of c's type to c, or appends
// c when the node has none of that type.
func SetNodeCondition(c corev1.NodeCondition) NodeModifier {
	return func(n *corev1.Node) {
		n.Status.Conditions = upsert(n.Status.Conditions, c, func(c corev1.NodeCondition) corev1.NodeConditionType { return c.Type })
	}
}
