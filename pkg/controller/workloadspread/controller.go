package workloadspread

import (
	"context"
	"errors"
	"fmt"

	appsinformers "k8s.io/client-go/informers/apps/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	alpha1informers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	beta1informers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	alpha1listers "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	beta1listers "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

// Name is the controller's name in logs, metrics and its queue.
const Name = "workloadspread"

// DefaultMaxPodWrites bounds the pod patches and deletions of one reconcile; the rest wait for
// the next, a second later.
const DefaultMaxPodWrites = 50

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	WorkloadSpreads alpha1informers.WorkloadSpreadInformer
	Pods            coreinformers.PodInformer
	// Nodes are read to adopt pods created before their WorkloadSpread (which subset's terms
	// their node satisfies); nil: no adoption.
	Nodes coreinformers.NodeInformer
	// The kinds a WorkloadSpread may target whose replicas are watched; each is optional (a nil
	// one is read through Scale).
	ReplicaSets          appsinformers.ReplicaSetInformer
	Deployments          appsinformers.DeploymentInformer
	StatefulSets         appsinformers.StatefulSetInformer
	Jobs                 batchinformers.JobInformer
	CloneSets            beta1informers.CloneSetInformer
	AdvancedStatefulSets beta1informers.StatefulSetInformer
	// Scale reads the replicas of any other kind through its scale subresource; nil: such
	// targets are reported as unsupported.
	Scale podbudget.ScaleFunc
	// MaxPodWrites defaults to DefaultMaxPodWrites.
	MaxPodWrites int
}

// Controller keeps WorkloadSpreads' status and their pods' deletion costs.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	spreads      alpha1listers.WorkloadSpreadLister
	byTarget     cache.Indexer
	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	replicaSets  appslisters.ReplicaSetLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	jobs         batchlisters.JobLister
	cloneSets    beta1listers.CloneSetLister
	advancedSets beta1listers.StatefulSetLister
	scale        podbudget.ScaleFunc
	recorder     record.EventRecorder
	clock        clock.WithTicker
	maxWrites    int
	unfit        unfitPods
	queue        workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.WorkloadSpreads == nil || cfg.Pods == nil {
		return nil, errors.New("workloadspread: Client, KruiseClient, WorkloadSpreads and Pods are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		spreads:      cfg.WorkloadSpreads.Lister(),
		pods:         cfg.Pods.Lister(),
		scale:        cfg.Scale,
		recorder:     cfg.Recorder,
		clock:        clk,
		maxWrites:    cfg.MaxPodWrites,
		queue:        workers.NewQueue(Name, clk),
	}
	if c.maxWrites <= 0 {
		c.maxWrites = DefaultMaxPodWrites
	}
	if cfg.Nodes != nil {
		c.nodes = cfg.Nodes.Lister()
	}
	inf := cfg.WorkloadSpreads.Informer()
	if err := inf.AddIndexers(cache.Indexers{targetIndex: indexByTarget}); err != nil {
		return nil, fmt.Errorf("indexing WorkloadSpreads by target: %w", err)
	}
	c.byTarget = inf.GetIndexer()
	if err := c.addHandlers(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run reconciles WorkloadSpreads with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	loop := workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "workloadSpread"}
	return ctrlbase.Run(ctx, c.client, &c.recorder, loop, n)
}
