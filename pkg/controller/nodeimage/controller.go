// Package nodeimage keeps one cluster-scoped NodeImage per node that runs a
// kruise-daemon: named like the node, labelled like it and owned by it.
//
// This controller owns a NodeImage's metadata only: its labels are exactly
// the node's (a label set on the NodeImage by anyone else is removed on the
// next sync), and its ownerReferences hold one reference to the node (other
// owners are kept). The spec belongs to the ImagePullJob controller and the
// status to kruise-daemon: they are never written here.
//
// Lifecycle:
//   - a Ready node without the type=virtual-kubelet label gets a NodeImage,
//     created with an empty spec;
//   - a node that becomes NotReady keeps its NodeImage (nodes flap; the
//     daemon resumes where it was);
//   - a virtual-kubelet node has none (any it has is deleted): no daemon
//     runs there;
//   - a deleted node's NodeImage is deleted here at once; the ownerReference
//     lets the garbage collector do the same should this controller miss it.
//
// A NodeImage whose node does not exist is deleted, so NodeImages left
// behind while the controller was down go on its first pass.
package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "nodeimage"

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Nodes      coreinformers.NodeInformer
	NodeImages kruiseinformers.NodeImageInformer
}

// Controller keeps the NodeImages.
type Controller struct {
	client          kubernetes.Interface
	kruiseClient    versioned.Interface
	nodeLister      corelisters.NodeLister
	nodeImageLister kruiselisters.NodeImageLister
	recorder        record.EventRecorder
	queue           workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers. It does not
// call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Nodes == nil || cfg.NodeImages == nil {
		return nil, errors.New("nodeimage: Client, KruiseClient, Nodes and NodeImages are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:          cfg.Client,
		kruiseClient:    cfg.KruiseClient,
		nodeLister:      cfg.Nodes.Lister(),
		nodeImageLister: cfg.NodeImages.Lister(),
		recorder:        cfg.Recorder,
		queue:           workers.NewQueue(Name, clk),
	}
	if _, err := cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNode,
		UpdateFunc: c.nodeUpdated,
		DeleteFunc: c.enqueueNode,
	}); err != nil {
		return nil, fmt.Errorf("adding node event handler: %w", err)
	}
	if _, err := cfg.NodeImages.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNodeImage,
		UpdateFunc: c.nodeImageUpdated,
		DeleteFunc: c.enqueueNodeImage,
	}); err != nil {
		return nil, fmt.Errorf("adding NodeImage event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes nodes with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "node"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.loop().ProcessNext(ctx)
}

// enqueueNode queues the node's name (adds, deletes, tombstones).
func (c *Controller) enqueueNode(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		c.queue.Add(node.Name)
	}
}

// nodeUpdated queues the node only when what the NodeImage depends on
// changed: its labels (the virtual-kubelet label among them) or readiness.
// Heartbeats and status updates, by far the most frequent, cost nothing.
func (c *Controller) nodeUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	cur, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if old.UID == cur.UID && isReady(old) == isReady(cur) && maps.Equal(old.Labels, cur.Labels) {
		return
	}
	c.queue.Add(cur.Name)
}

// enqueueNodeImage queues the node a NodeImage belongs to (its name).
func (c *Controller) enqueueNodeImage(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if ni, ok := obj.(*appsv1beta1.NodeImage); ok {
		c.queue.Add(ni.Name)
	}
}

// nodeImageUpdated queues the node when the NodeImage's metadata that this
// controller owns changed; spec and status updates (the ImagePullJob
// controller's and the daemon's, frequent) are not ours to look at.
func (c *Controller) nodeImageUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*appsv1beta1.NodeImage)
	cur, ok2 := newObj.(*appsv1beta1.NodeImage)
	if !ok1 || !ok2 {
		return
	}
	if maps.Equal(old.Labels, cur.Labels) &&
		slices.EqualFunc(old.OwnerReferences, cur.OwnerReferences, ownerRefEqual) &&
		(old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil) {
		return
	}
	c.queue.Add(cur.Name)
}

// isReady reports whether the node's Ready condition is True.
func isReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isVirtual reports whether the node is a virtual-kubelet node.
func isVirtual(node *corev1.Node) bool {
	return node.Labels[appsv1alpha1.VirtualKubeletLabel] == appsv1alpha1.VirtualKubeletValue
}
