package imagepulljob

import (
	"context"
	"errors"
	"sync"
	"time"

	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the job queue; the node
// queue is Name + "-nodeimage".
const Name = "imagepulljob"

// Defaults of the Config periods.
const (
	// DefaultRepullPeriod: a Never job pulls its image again on a node whose
	// last successful pull is this old (OpenKruise re-pulls about daily), so
	// an image removed by the kubelet's image GC comes back.
	DefaultRepullPeriod = 24 * time.Hour
	// DefaultRetryFailedPeriod: a Never job retries a node whose pull failed
	// this long ago.
	DefaultRetryFailedPeriod = 30 * time.Minute
)

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Jobs       kruiseinformers.ImagePullJobInformer
	NodeImages kruiseinformers.NodeImageInformer
	Pods       coreinformers.PodInformer
	// Secrets sees the secrets jobs name as pull secrets (their namespaces).
	Secrets coreinformers.SecretInformer
	// Copies sees the pull-secret copies in v1beta1.DaemonConfigNamespace
	// (finalizer.go); nil means Secrets, which must then see it too.
	Copies coreinformers.SecretInformer
	// RepullPeriod defaults to DefaultRepullPeriod.
	RepullPeriod time.Duration
	// RetryFailedPeriod defaults to DefaultRetryFailedPeriod.
	RetryFailedPeriod time.Duration
	// NodeImageSpecBudget is the most bytes of a NodeImage's spec;
	// defaults to DefaultNodeImageSpecBudget (budget.go).
	NodeImageSpecBudget int
}

// Controller runs ImagePullJobs.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	jobLister    kruiselisters.ImagePullJobLister
	jobIndexer   cache.Indexer
	niLister     kruiselisters.NodeImageLister
	niIndexer    cache.Indexer
	podLister    corelisters.PodLister
	secretLister corelisters.SecretLister
	copyLister   corelisters.SecretLister
	recorder     record.EventRecorder
	clock        clock.WithTicker
	repull       time.Duration
	retryFailed  time.Duration
	specBudget   int

	jobQueue  workqueue.TypedRateLimitingInterface[string]
	nodeQueue workqueue.TypedRateLimitingInterface[string]
	// rechecks are the jobs' pending timed looks.
	rechecks *rechecks
	// results dates the pull results on the controller's clock.
	results *resultTimes

	// plans holds the latest plan of each job.
	plans *planStore

	// refusals holds, per node, the jobs whose request the last node sync
	// left out for lack of room, and why (budget.go).
	refusals *refusals
}

// New builds the controller and registers its event handlers and indexes. It
// does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Jobs == nil || cfg.NodeImages == nil || cfg.Pods == nil || cfg.Secrets == nil {
		return nil, errors.New("imagepulljob: Client, KruiseClient, Jobs, NodeImages, Pods and Secrets are required")
	}
	clk := cfg.ClockOrReal()
	if cfg.Copies == nil {
		cfg.Copies = cfg.Secrets
	}
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		jobLister:    cfg.Jobs.Lister(),
		jobIndexer:   cfg.Jobs.Informer().GetIndexer(),
		niLister:     cfg.NodeImages.Lister(),
		niIndexer:    cfg.NodeImages.Informer().GetIndexer(),
		podLister:    cfg.Pods.Lister(),
		secretLister: cfg.Secrets.Lister(),
		copyLister:   cfg.Copies.Lister(),
		recorder:     cfg.Recorder,
		clock:        clk,
		repull:       cfg.RepullPeriod,
		retryFailed:  cfg.RetryFailedPeriod,
		specBudget:   cfg.NodeImageSpecBudget,
		jobQueue:     workers.NewQueue(Name, clk),
		nodeQueue:    workers.NewQueue(Name+"-nodeimage", clk),
		plans:        newPlanStore(),
		refusals:     newRefusals(),
	}
	c.rechecks = newRechecks(clk, c.jobQueue.Add)
	c.results = newResultTimes()
	if c.repull <= 0 {
		c.repull = DefaultRepullPeriod
	}
	if c.retryFailed <= 0 {
		c.retryFailed = DefaultRetryFailedPeriod
	}
	if c.specBudget <= 0 {
		c.specBudget = DefaultNodeImageSpecBudget
	}
	if err := addIndexes(cfg); err != nil {
		return nil, err
	}
	if err := c.addHandlers(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes jobs and NodeImages with n workers each until ctx ends.
// Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	defer c.jobQueue.ShutDown()
	defer c.nodeQueue.ShutDown()
	defer c.rechecks.stopAll()
	return events.While(ctx, c.client, &c.recorder, func() {
		klog.FromContext(ctx).Info("Started workers", "workers", n)
		var wg sync.WaitGroup
		wg.Go(func() { c.jobLoop().Run(ctx, n) })
		wg.Go(func() { c.nodeLoop().Run(ctx, n) })
		wg.Wait()
	})
}

func (c *Controller) jobLoop() workers.Loop {
	return workers.Loop{Queue: c.jobQueue, Sync: c.syncJobTimed, KeyName: "imagePullJob"}
}

func (c *Controller) nodeLoop() workers.Loop {
	return workers.Loop{Queue: c.nodeQueue, Sync: c.syncNodeImage, KeyName: "nodeImage"}
}
