package framework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// Simulated nodes: Node objects whose kubelet is kwok, which hack/cluster.sh runs as a component of
// the local cluster (stages in hack/kwok-stages.yaml). Pods scheduled there become Running and
// Ready without containers, and go when their grace period ends after a delete; so a test can
// spread real pod objects over zones and pools that one machine does not have.
const (
	// SimNodeLabel hands a Node to kwok (its --manage-nodes-with-label-selector); the value is
	// SimNodeValue. Its NoSchedule taint has the same key and value.
	SimNodeLabel = "kwok.x-k8s.io/node"
	SimNodeValue = "fake"
	// VirtualKubeletLabel=virtual-kubelet is also set: OpenKruise's mark of a node without
	// kruise-daemon, so no kruise-daemon pod is placed there and it gets no NodeImage (an
	// ImagePullJob over all nodes would wait for it forever).
	VirtualKubeletLabel = "type"
	VirtualKubeletValue = "virtual-kubelet"
	// SimNodeMaxPodsAnnotation on a simulated Node, set when it is created, is how many pods it
	// takes (its allocatable pods; default 1000): a pool that fills up.
	SimNodeMaxPodsAnnotation = "sim.kruise.io/max-pods"
	// simNodeTimeout bounds a node's becoming Ready and schedulable.
	simNodeTimeout = time.Minute
)

// SimNodeToleration tolerates the simulated nodes' taint: give it to the pods (or a
// WorkloadSpread subset) meant to land there. Pods without it never do.
func SimNodeToleration() corev1.Toleration {
	return corev1.Toleration{Key: SimNodeLabel, Operator: corev1.TolerationOpEqual, Value: SimNodeValue, Effect: corev1.TaintEffectNoSchedule}
}

// SimNode builds the Node object of a simulated node named name with labels added to kwok's
// and the virtual-kubelet label; tainted says whether it carries the NoSchedule taint.
func SimNode(name string, labels map[string]string, tainted bool) *corev1.Node {
	l := map[string]string{SimNodeLabel: SimNodeValue, VirtualKubeletLabel: VirtualKubeletValue, corev1.LabelHostname: name}
	maps.Copy(l, labels)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	if tainted {
		node.Spec.Taints = []corev1.Taint{{Key: SimNodeLabel, Value: SimNodeValue, Effect: corev1.TaintEffectNoSchedule}}
	}
	return node
}

// SimNodes creates n simulated nodes carrying labels (a zone, a pool), tainted so that only pods
// tolerating SimNodeToleration land there, waits until each is Ready and schedulable, and returns
// their names (unique to this call: kwok-<prefix>-<random>-<i>). When the test ends the nodes are
// deleted, and with them every pod bound to them.
func (f *Framework) SimNodes(ctx context.Context, t testing.TB, prefix string, n int, labels map[string]string) []string {
	t.Helper()
	return f.SimNodesWithCapacity(ctx, t, prefix, n, labels, 0)
}

// SimNodesWithCapacity is SimNodes with room for maxPods pods on each node (0: the default 1000).
func (f *Framework) SimNodesWithCapacity(ctx context.Context, t testing.TB, prefix string, n int, labels map[string]string, maxPods int) []string {
	t.Helper()
	base := fmt.Sprintf("kwok-%s-%s", strings.ToLower(prefix), rand.String(5))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", base, i)
	}
	t.Cleanup(func() { f.deleteSimNodes(t, names) })
	for _, name := range names {
		node := SimNode(name, labels, true)
		if maxPods > 0 {
			node.Annotations = map[string]string{SimNodeMaxPodsAnnotation: strconv.Itoa(maxPods)}
		}
		if _, err := f.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating simulated node %s: %v", name, err)
		}
	}
	WaitFor(ctx, t, simNodeTimeout, fmt.Sprintf("simulated nodes %s-* Ready and schedulable (is kwok running? hack/cluster.sh status)", base),
		func(ctx context.Context) (bool, string, error) {
			var waiting []string
			for _, name := range names {
				node, err := f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				if why := simNodeNotReady(node); why != "" {
					waiting = append(waiting, name+": "+why)
				}
			}
			return len(waiting) == 0, strings.Join(waiting, "; "), nil
		})
	return names
}

// simNodeNotReady says why a simulated node cannot take pods yet: not Ready, or still carrying
// a taint the node lifecycle controller removes once it is (not-ready, unreachable).
func simNodeNotReady(node *corev1.Node) string {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return "not Ready"
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key != SimNodeLabel {
			return "tainted " + taint.Key
		}
	}
	return ""
}

// deleteSimNodes removes the nodes, then the pods bound to them, at once: nobody finishes their
// deletion once kwok lets go of the node (nodes first, so that no replacement is bound to one).
func (f *Framework) deleteSimNodes(t testing.TB, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range names {
		if err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting simulated node %s: %v", name, err)
		}
	}
	f.deletePodsOn(ctx, t, names)
}

func (f *Framework) deletePodsOn(ctx context.Context, t testing.TB, nodes []string) {
	for _, node := range nodes {
		pods, err := f.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
		})
		if err != nil {
			t.Logf("listing the pods of simulated node %s: %v", node, err)
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			err := f.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting pod %s/%s of simulated node %s: %v", p.Namespace, p.Name, node, err)
			}
		}
	}
}

// NodeLabelsOf returns, for each node name, the value of label key on that node ("" when the
// node has no such label or is gone): where pods landed, by zone or pool.
func (f *Framework) NodeLabelsOf(ctx context.Context, key string, nodes ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range slices.Compact(slices.Sorted(slices.Values(nodes))) {
		if name == "" {
			continue
		}
		node, err := f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out[name] = ""
			continue
		}
		if err != nil {
			return nil, err
		}
		out[name] = node.Labels[key]
	}
	return out, nil
}
