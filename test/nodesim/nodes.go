// Package nodesim stands in for nodes that have no kubelet and no kruise-daemon: it creates Node
// and NodeImage objects for them, so that the controller and the API server can be measured at a
// scale one machine cannot run for real.
//
// A simulated node carries the label Label and a NoSchedule taint of the same key. The taint keeps
// ordinary pods away; kruise-daemon tolerates every taint, so the local cluster's DaemonSet also
// requires the label to be absent (deploy/overlays/local). Nothing ever runs on a simulated node.
package nodesim

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// Label marks simulated Nodes and their NodeImages; its value is the run that made them.
const Label = "kruise.io/simulated-node"

// pollInterval spaces the checks that deleted nodes are gone.
const pollInterval = 500 * time.Millisecond

// Clients are what the simulator writes with.
type Clients struct {
	Kube   kubernetes.Interface
	Kruise versioned.Interface
}

// NodeSpec describes one simulated node.
type NodeSpec struct {
	Name string
	// Labels are added to Label=<run>.
	Labels map[string]string
}

// Node returns the Node object of a simulated node of the given run.
func Node(run string, s NodeSpec) *corev1.Node {
	labels := map[string]string{Label: run, corev1.LabelHostname: s.Name}
	for k, v := range s.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: Label, Value: run, Effect: corev1.TaintEffectNoSchedule,
		}}},
	}
}

// CreateNodes creates the Node and the NodeImage of each spec, with at most concurrency requests
// in flight. The NodeImage is owned by its Node, so deleting the Node also deletes it. Objects that
// already exist are kept, so a run can be resumed.
func CreateNodes(ctx context.Context, c Clients, run string, specs []NodeSpec, concurrency int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for _, s := range specs {
		g.Go(func() error { return createNode(ctx, c, run, s) })
	}
	return g.Wait()
}

func createNode(ctx context.Context, c Clients, run string, s NodeSpec) error {
	node := Node(run, s)
	created, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = c.Kube.CoreV1().Nodes().Get(ctx, s.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating simulated node %s: %w", s.Name, err)
	}
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{
		Name:            s.Name,
		Labels:          node.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: s.Name, UID: created.UID}},
	}}
	if _, err := c.Kruise.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the NodeImage of simulated node %s: %w", s.Name, err)
	}
	return nil
}

// DeleteNodes deletes every simulated Node and NodeImage (of any run) and waits until the Nodes
// are gone.
func DeleteNodes(ctx context.Context, c Clients, concurrency int) error {
	sel := metav1.ListOptions{LabelSelector: Label}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		return fmt.Errorf("listing simulated nodes: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for i := range nodes.Items {
		name := nodes.Items[i].Name
		g.Go(func() error {
			err := c.Kube.CoreV1().Nodes().Delete(gctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting simulated node %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// NodeImages whose Node was never created, or not yet collected.
	if err := c.Kruise.AppsV1beta1().NodeImages().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("deleting the NodeImages of simulated nodes: %w", err)
	}
	return wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		left, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: Label, Limit: 1})
		if err != nil {
			return false, nil
		}
		return len(left.Items) == 0, nil
	})
}
