package framework

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// NodeName is the name of the cluster's one real node (env KRUISE_E2E_NODE, default vm).
func NodeName() string { return envOr("KRUISE_E2E_NODE", "vm") }

// FakeNode creates a Node object without a kubelet behind it, tainted NoSchedule so that no pod
// lands there, and its NodeImage (the NodeImage controller creates them only for Ready nodes);
// both are deleted when the test ends.
func (f *Framework) FakeNode(ctx context.Context, t testing.TB, c versioned.Interface, name string, labels map[string]string) {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: "kruise.e2e/fake-node", Value: "true", Effect: corev1.TaintEffectNoSchedule,
		}}},
	}
	created, err := f.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating fake node %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting fake node %s: %v", name, err)
		}
		err := c.AppsV1beta1().NodeImages().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting NodeImage %s: %v", name, err)
		}
		f.deletePodsPinnedTo(ctx, t, name)
	})
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: created.UID}},
	}}
	if _, err := c.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating NodeImage %s: %v", name, err)
	}
}

// deletePodsPinnedTo deletes the never-scheduled pods the DaemonSet controller made for a fake
// node (kruise-daemon tolerates every taint); it is slow to remove them once the node is gone.
func (f *Framework) deletePodsPinnedTo(ctx context.Context, t testing.TB, node string) {
	pods, err := f.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil {
		t.Logf("listing pods left for fake node %s: %v", node, err)
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		a := p.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			continue
		}
		pinned := false
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, m := range term.MatchFields {
				if m.Key == "metadata.name" && len(m.Values) == 1 && m.Values[0] == node {
					pinned = true
				}
			}
		}
		if !pinned {
			continue
		}
		err := f.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting pod %s/%s pinned to fake node %s: %v", p.Namespace, p.Name, node, err)
		}
	}
}

// CreateVirtualKubeletNode creates a Node object labelled type=virtual-kubelet, with no kubelet
// behind it and a NoSchedule taint so that nothing is scheduled there, and deletes it when the
// test ends. It returns the node's name.
func (f *Framework) CreateVirtualKubeletNode(ctx context.Context, t testing.TB) string {
	t.Helper()
	name := "vk-" + rand.String(6)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"type": "virtual-kubelet", "kruise.e2e/test": "true"},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: "kruise.e2e/virtual-kubelet", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if _, err := f.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
	return name
}
