// Package crr runs the lifecycle of ContainerRecreateRequests (CRRs) in
// kruise-controller, as docs/design/crr.md lays out: it admits new requests
// (fills in their labels and per-container context from the pod), completes
// those that can no longer make progress (deadline, pod gone or replaced, no
// live kruise-daemon on the node), removes the active label of finished
// requests and deletes them after ttlSecondsAfterFinished. The node daemon
// does the recreating itself.
package crr

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	appsinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "containerrecreaterequest"

// Config is what the controller is built from. Informers must not be started
// yet: New adds indexes to them.
type Config struct {
	ctrlbase.Config
	CRRs appsinformers.ContainerRecreateRequestInformer
	Pods coreinformers.PodInformer
	// Leases must be scoped to Namespace, where the daemons' heartbeat
	// Leases live.
	Leases    coordinationinformers.LeaseInformer
	Namespace string
	// Metrics registers the controller's metrics; nil leaves them
	// unregistered.
	Metrics prometheus.Registerer
}

// Controller is the CRR lifecycle controller.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	crrLister    appslisters.ContainerRecreateRequestLister
	crrIndexer   cache.Indexer
	podLister    corelisters.PodLister
	leaseLister  coordinationlisters.LeaseLister
	namespace    string
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]

	// startedAt is when this replica began running the controller; the
	// grace given to a node's daemon counts from no earlier than this, so a
	// new leader does not judge daemons on heartbeats it never watched.
	startedAt time.Time
	// liveness is when each node's daemon was last seen renewing its Lease.
	liveness *liveness

	metrics *metrics
	// running is true while Run processes requests: the caches are synced
	// and this replica leads.
	running atomic.Bool
	// ownCompletions holds the reason of each request (by UID) this
	// controller is completing, from just before its write until the
	// informer delivers it completed, so that the completion is counted
	// once, under that reason, rather than as the daemon's.
	ownCompletions sync.Map
}

// New builds the controller and registers its indexes and event handlers.
// It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.CRRs == nil || cfg.Pods == nil || cfg.Leases == nil || cfg.Namespace == "" {
		return nil, errors.New("recreate: Client, KruiseClient, CRRs, Pods, Leases and Namespace are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		crrLister:    cfg.CRRs.Lister(),
		crrIndexer:   cfg.CRRs.Informer().GetIndexer(),
		podLister:    cfg.Pods.Lister(),
		leaseLister:  cfg.Leases.Lister(),
		namespace:    cfg.Namespace,
		recorder:     cfg.Recorder,
		clock:        clk,
		liveness:     newLiveness(clk),
		queue:        workers.NewQueue(Name, clk),
	}
	c.metrics = newMetrics(c)
	if cfg.Metrics != nil {
		if err := c.metrics.register(cfg.Metrics); err != nil {
			return nil, fmt.Errorf("registering CRR metrics: %w", err)
		}
	}
	if err := cfg.CRRs.Informer().AddIndexers(cache.Indexers{podIndex: indexByPod, nodeIndex: indexByNode}); err != nil {
		return nil, fmt.Errorf("adding CRR indexes: %w", err)
	}
	if _, err := cfg.CRRs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.crrChanged,
		UpdateFunc: func(old, cur any) {
			c.countCompletion(old, cur)
			c.crrChanged(cur)
		},
		DeleteFunc: func(obj any) {
			c.forgetCompletion(obj)
			c.crrChanged(obj)
		},
	}); err != nil {
		return nil, fmt.Errorf("adding CRR event handler: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(old, cur any) { c.podUpdated(old, cur) },
		DeleteFunc: c.podChanged,
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	if _, err := cfg.Leases.Informer().AddEventHandler(ctrlbase.Handlers(c.leaseChanged, c.leaseDeleted)); err != nil {
		return nil, fmt.Errorf("adding lease event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes CRRs with workers goroutines until ctx ends. Caches must be
// synced.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()

	return events.While(ctx, c.client, &c.recorder, func() {
		c.startedAt = c.clock.Now()
		c.running.Store(true)
		defer c.running.Store(false)
		logger.Info("Started workers", "workers", workers)
		c.loop().Run(ctx, workers)
	})
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "crr"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.loop().ProcessNext(ctx)
}
