// Package broadcastjob runs v1beta1 BroadcastJobs (OpenKruise v1.9.0's semantics): one pod of
// the job's template on every node that fits it (decide.go), pinned there by required node
// affinity so that the scheduler binds it, parallelism, completion and failure policies, paused,
// deadline and TTL. The decision is the pure Decide; this file and sync.go are the I/O around it.
//
// At most one pod per node, whatever the cache's lag or a restart: a creation is expected by
// node until the pod informer shows a pod for that node (expectations), and a pass does nothing
// while one is awaited; pods are read from the informer's owner index, nodes from its lister.
package broadcastjob

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "broadcastjob"

// controllerKind is what the pods' controller references say (any version of the group and
// kind is recognised, so pods OpenKruise made through v1alpha1 are the job's too).
var controllerKind = v1beta1.SchemeGroupVersion.WithKind("BroadcastJob")

// nodePods is the expectation resource of a pod awaited for a node: creations are keyed by the
// node's name, since the pod's name is only known once the API server generated it.
const nodePods expectations.Resource = "pods-for-node"

// expectationTimeout is how long a create or delete may go unseen by the informers before the
// job is managed again anyway.
const expectationTimeout = 5 * time.Minute

// Config is what the controller is built from. Informers must not be started yet.
type Config struct {
	ctrlbase.Config
	Jobs  kruiseinformers.BroadcastJobInformer
	Pods  coreinformers.PodInformer
	Nodes coreinformers.NodeInformer
}

// Controller runs BroadcastJobs.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	jobs         kruiselisters.BroadcastJobLister
	podIndex     cache.Indexer
	nodes        corelisters.NodeLister
	expect       *expectations.Scale
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its index and event handlers. It does not call the
// API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Jobs == nil || cfg.Pods == nil || cfg.Nodes == nil {
		return nil, errors.New("broadcastjob: Client, KruiseClient, Jobs, Pods and Nodes are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		jobs:         cfg.Jobs.Lister(),
		podIndex:     cfg.Pods.Informer().GetIndexer(),
		nodes:        cfg.Nodes.Lister(),
		expect:       expectations.NewScale(clk, expectationTimeout),
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
	}
	if _, err := cfg.Jobs.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueue, c.jobDeleted)); err != nil {
		return nil, fmt.Errorf("adding the BroadcastJob event handler: %w", err)
	}
	if err := ownership.AddIndex(cfg.Pods.Informer(), controllerKind); err != nil {
		return nil, fmt.Errorf("adding the pod owner index: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.podAdded, UpdateFunc: c.podUpdated, DeleteFunc: c.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding the pod event handler: %w", err)
	}
	if _, err := cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				c.enqueueForNode(nil, n)
			}
		},
		UpdateFunc: func(oldObj, curObj any) {
			old, ok1 := oldObj.(*corev1.Node)
			cur, ok2 := curObj.(*corev1.Node)
			if ok1 && ok2 && fitInputsChanged(old, cur) {
				c.enqueueForNode(old, cur)
			}
		},
		DeleteFunc: func(obj any) {
			if m, ok := expectations.DeletedObject(obj); ok {
				if n, ok := m.(*corev1.Node); ok {
					c.enqueueForNode(n, nil)
				}
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("adding the node event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes BroadcastJobs with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "broadcastJob"}, n)
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) jobDeleted(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expect.Forget(key)
	}
}

// ownerKey is the queue key of the cached job controlling pod, with that UID.
func (c *Controller) ownerKey(pod metav1.Object) (string, bool) {
	ref := ownership.Ref(pod, controllerKind)
	if ref == nil {
		return "", false
	}
	job, err := c.jobs.BroadcastJobs(pod.GetNamespace()).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return "", false
	}
	return pod.GetNamespace() + "/" + ref.Name, true
}

func (c *Controller) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key, ok := c.ownerKey(pod); ok {
		c.expect.Observe(key, expectations.Create, nodePods, nodefit.TargetNode(pod))
		if pod.DeletionTimestamp != nil {
			c.expect.Observe(key, expectations.Delete, expectations.Pods, pod.Name)
		}
		c.queue.Add(key)
	}
}

func (c *Controller) podUpdated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	key, ok := c.ownerKey(cur)
	if !ok {
		return
	}
	if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		c.expect.Observe(key, expectations.Delete, expectations.Pods, cur.Name)
	}
	if podNoise(old, cur) {
		return
	}
	if (old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil) && old.Spec.NodeName == cur.Spec.NodeName {
		// A phase or restart change: counts only. Batched, as the built-in Job controller batches
		// them, so that pods ending one after another cost one status write a second, not one
		// each; the queue keeps a single pending entry per job.
		c.queue.AddAfter(key, podStatusBatch)
		return
	}
	c.queue.Add(key)
}

// podStatusBatch is how long a pod's phase change waits before its job is synced, gathering the
// changes of the job's other pods into the same sync.
const podStatusBatch = time.Second

// podNoise: the update changes nothing Decide reads of a pod (its phase, deletion, node,
// restarts, tolerations).
func podNoise(old, cur *corev1.Pod) bool {
	return old.Status.Phase == cur.Status.Phase && (old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil) &&
		old.Spec.NodeName == cur.Spec.NodeName && restarts(old) == restarts(cur) &&
		reflect.DeepEqual(old.Spec.Tolerations, cur.Spec.Tolerations)
}

func (c *Controller) podDeleted(obj any) {
	m, ok := expectations.DeletedObject(obj)
	if !ok {
		return
	}
	if key, ok := c.ownerKey(m); ok {
		c.expect.ObserveDeleted(key, expectations.Pods, obj)
		if pod, ok := m.(*corev1.Pod); ok {
			// A pod deleted before the cache ever showed it (seen first on a relist).
			c.expect.Observe(key, expectations.Create, nodePods, nodefit.TargetNode(pod))
		}
		c.queue.Add(key)
	}
}

// fitInputsChanged: what Fits reads of a node changed (labels, taints, unschedulable,
// allocatable). Heartbeats and condition updates change none of it, so they queue nothing:
// a NotReady node matters through the taints the node lifecycle controller sets.
func fitInputsChanged(old, cur *corev1.Node) bool {
	return !reflect.DeepEqual(old.Labels, cur.Labels) || !reflect.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		old.Spec.Unschedulable != cur.Spec.Unschedulable || !reflect.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable)
}

// enqueueForNode queues the unfinished jobs for which the node's change matters: a node added
// (old nil) that fits, a node gone (cur nil) that some pod of the job may be on, a node whose
// fit flipped. Finished jobs are skipped; the cost is one fit check per unfinished job.
func (c *Controller) enqueueForNode(old, cur *corev1.Node) {
	list, err := c.jobs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, job := range list {
		if Finished(job) {
			continue
		}
		var before, after nodefit.Fit
		if old != nil {
			before = Fits(old, &job.Spec.Template, nil)
		}
		if cur != nil {
			after = Fits(cur, &job.Spec.Template, nil)
		}
		switch {
		case cur == nil: // gone: its pod, if any, is deleted and no longer counted
			c.enqueue(job)
		case before != after:
			c.enqueue(job)
		}
	}
}
