package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "sidecarset"

// expectationTimeout is how long an upgrade's pod write may go unseen by the pod cache before
// the SidecarSet's pods are upgraded again anyway.
const expectationTimeout = 5 * time.Minute

// Config is what the controller is built from. Informers must not be started yet.
type Config struct {
	ctrlbase.Config
	SidecarSets kruiseinformers.SidecarSetInformer
	Pods        coreinformers.PodInformer
	Namespaces  coreinformers.NamespaceInformer
	// Revisions must see Namespace, where the SidecarSets' ControllerRevisions live.
	Revisions appsinformers.ControllerRevisionInformer
	// Namespace is the namespace kruise runs in.
	Namespace string
	// Metrics registers the controller's metrics; nil leaves them unregistered.
	Metrics prometheus.Registerer
	// Budget is asked before a pod's sidecars are upgraded or handed over in place (gate
	// PodUnavailableBudgetUpdateGate); the zero Check asks nothing. A pod a budget holds waits.
	Budget budgetwait.Check
	// Resize says whether pods can be resized in place: nil, they can. With it, a change of a
	// sidecar's cpu and memory is upgraded in place like an image (resize.go).
	Resize *inplace.ResizeSupport
}

// Controller runs SidecarSets.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	sidecarSets  kruiselisters.SidecarSetLister
	pods         corelisters.PodLister
	namespaces   corelisters.NamespaceLister
	namespace    string
	history      *revision.History
	// podVersions holds back upgrades of a SidecarSet's pods until the cache shows the
	// controller's last write to each: counted from a stale copy, an upgraded pod would look
	// ready and not updated, and maxUnavailable would be overrun.
	podVersions *expectations.ResourceVersions
	recorder    record.EventRecorder
	clock       clock.WithTicker
	metrics     *metrics
	queue       workqueue.TypedRateLimitingInterface[string]

	// reported holds, per SidecarSet, the not-upgradable pods last reported in an Event, so
	// that the same finding is not reported on every pass.
	reportedMu sync.Mutex
	reported   map[string]string

	// budget is Config.Budget; budgetWaits reports pods waiting for it, once per reason.
	budget      budgetwait.Check
	budgetWaits *budgetwait.Reporter
	// resize is Config.Resize.
	resize *inplace.ResizeSupport
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.SidecarSets == nil || cfg.Pods == nil || cfg.Namespaces == nil || cfg.Revisions == nil || cfg.Namespace == "" {
		return nil, errors.New("sidecarset: Client, KruiseClient, SidecarSets, Pods, Namespaces, Revisions and Namespace are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		sidecarSets:  cfg.SidecarSets.Lister(),
		pods:         cfg.Pods.Lister(),
		namespaces:   cfg.Namespaces.Lister(),
		namespace:    cfg.Namespace,
		history:      revision.NewHistory(cfg.Client, cfg.Revisions.Lister()),
		podVersions:  expectations.NewResourceVersions(clk, expectationTimeout),
		recorder:     cfg.Recorder,
		clock:        clk,
		metrics:      newMetrics(),
		queue:        workers.NewQueue(Name, clk),
		reported:     map[string]string{},
		budget:       cfg.Budget,
		budgetWaits:  budgetwait.NewReporter(),
		resize:       cfg.Resize,
	}
	if cfg.Metrics != nil {
		if err := c.metrics.register(cfg.Metrics); err != nil {
			return nil, fmt.Errorf("registering SidecarSet metrics: %w", err)
		}
	}
	if err := c.addHandlers(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes SidecarSets with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "sidecarSet"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.loop().ProcessNext(ctx)
}
