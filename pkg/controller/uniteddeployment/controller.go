package uniteddeployment

import (
	"context"
	"errors"
	"fmt"

	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
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
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Name is the controller's name in logs, metrics and its queue (whose workqueue metrics, e.g.
// workqueue_adds_total{name="uniteddeployment"}, count its reconciles).
const Name = "uniteddeployment"

// Config is what the controller is built from. Every informer is required.
type Config struct {
	ctrlbase.Config
	UnitedDeployments    alpha1informers.UnitedDeploymentInformer
	CloneSets            beta1informers.CloneSetInformer
	AdvancedStatefulSets beta1informers.StatefulSetInformer
	StatefulSets         appsinformers.StatefulSetInformer
	Deployments          appsinformers.DeploymentInformer
	// ReplicaSets map a Deployment subset's pods to their Deployment.
	ReplicaSets appsinformers.ReplicaSetInformer
	Pods        coreinformers.PodInformer
	Revisions   appsinformers.ControllerRevisionInformer
}

// Controller keeps each UnitedDeployment's subset workloads and its status.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	uds          alpha1listers.UnitedDeploymentLister
	cloneSets    beta1listers.CloneSetLister
	advanced     beta1listers.StatefulSetLister
	statefulSets appslisters.StatefulSetLister
	deployments  appslisters.DeploymentLister
	replicaSets  appslisters.ReplicaSetLister
	pods         corelisters.PodLister
	indexes      []cache.Indexer
	history      *revision.History
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.UnitedDeployments == nil || cfg.CloneSets == nil ||
		cfg.AdvancedStatefulSets == nil || cfg.StatefulSets == nil || cfg.Deployments == nil || cfg.ReplicaSets == nil ||
		cfg.Pods == nil || cfg.Revisions == nil {
		return nil, errors.New("uniteddeployment: the clients and every informer are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		uds:          cfg.UnitedDeployments.Lister(),
		cloneSets:    cfg.CloneSets.Lister(),
		advanced:     cfg.AdvancedStatefulSets.Lister(),
		statefulSets: cfg.StatefulSets.Lister(),
		deployments:  cfg.Deployments.Lister(),
		replicaSets:  cfg.ReplicaSets.Lister(),
		pods:         cfg.Pods.Lister(),
		history:      revision.NewHistory(cfg.Client, cfg.Revisions.Lister()),
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
	}
	for _, inf := range []cache.SharedIndexInformer{cfg.CloneSets.Informer(), cfg.AdvancedStatefulSets.Informer(),
		cfg.StatefulSets.Informer(), cfg.Deployments.Informer()} {
		if _, ok := inf.GetIndexer().GetIndexers()[ownerIndex]; !ok {
			if err := inf.AddIndexers(cache.Indexers{ownerIndex: indexByOwner}); err != nil {
				return nil, fmt.Errorf("indexing subset workloads by UnitedDeployment: %w", err)
			}
		}
		c.indexes = append(c.indexes, inf.GetIndexer())
	}
	if err := c.addHandlers(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run reconciles UnitedDeployments with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	loop := workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "unitedDeployment"}
	return ctrlbase.Run(ctx, c.client, &c.recorder, loop, n)
}
