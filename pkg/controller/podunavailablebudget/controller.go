package podunavailablebudget

import (
	"context"
	"errors"

	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	policyinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/policy/v1alpha1"
	policylisters "github.com/nodekruise/kruise/pkg/client/listers/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

// Name is the controller's name in logs, metrics and its queue.
const Name = "podunavailablebudget"

// DefaultMaxPodPatches bounds the kruise.io/related-pub patches of one reconcile.
const DefaultMaxPodPatches = 50

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Budgets policyinformers.PodUnavailableBudgetInformer
	Pods    coreinformers.PodInformer
	// The workloads whose replicas and owners the budgets read; each is optional (a nil one is
	// read through Scale, or not at all).
	ReplicaSets          appsinformers.ReplicaSetInformer
	Deployments          appsinformers.DeploymentInformer
	StatefulSets         appsinformers.StatefulSetInformer
	CloneSets            kruiseinformers.CloneSetInformer
	AdvancedStatefulSets kruiseinformers.StatefulSetInformer
	// Scale reads the replicas of other kinds through their scale subresource; nil: such
	// targets count their covered pods.
	Scale podbudget.ScaleFunc
	// MaxPodPatches defaults to DefaultMaxPodPatches.
	MaxPodPatches int
}

// Controller keeps PodUnavailableBudgets' status.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	budgets      policylisters.PodUnavailableBudgetLister
	pods         corelisters.PodLister
	workloads    podbudget.Listers
	recorder     record.EventRecorder
	clock        clock.WithTicker
	maxPatches   int
	queue        workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Budgets == nil || cfg.Pods == nil {
		return nil, errors.New("podunavailablebudget: Client, KruiseClient, Budgets and Pods are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		budgets:      cfg.Budgets.Lister(),
		pods:         cfg.Pods.Lister(),
		recorder:     cfg.Recorder,
		clock:        clk,
		maxPatches:   cfg.MaxPodPatches,
		queue:        workers.NewQueue(Name, clk),
		workloads:    podbudget.Listers{Scale: cfg.Scale},
	}
	if c.maxPatches <= 0 {
		c.maxPatches = DefaultMaxPodPatches
	}
	if err := c.addHandlers(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run reconciles budgets with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	loop := workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "podUnavailableBudget"}
	return ctrlbase.Run(ctx, c.client, &c.recorder, loop, n)
}
