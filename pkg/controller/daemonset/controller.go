package daemonset

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/retry"
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
	"github.com/nodekruise/kruise/pkg/workload/ownership"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "daemonset"

// expectationTimeout is how long a create or delete may go unseen by the informers before the
// DaemonSet is managed again anyway.
const expectationTimeout = 5 * time.Minute

// Backoff of deleting a node's failed daemon pods again: a kubelet that keeps rejecting the pod
// must not make the controller and the kubelet fight in a hot loop.
const (
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
)

// Config is what the controller is built from. Informers must not be started yet.
type Config struct {
	ctrlbase.Config
	DaemonSets kruiseinformers.DaemonSetInformer
	Pods       coreinformers.PodInformer
	Nodes      coreinformers.NodeInformer
	Revisions  appsinformers.ControllerRevisionInformer
	// Option's gate is PreDownloadImageForDaemonSetUpdate (predownload.go).
	predownload.Option
	// Budget is asked before a pod is updated in place (gate PodUnavailableBudgetUpdateGate);
	// the zero Check asks nothing. A pod a budget holds waits, as does one whose deletion the pod
	// webhook refuses for a budget.
	Budget budgetwait.Check
	// Resize says whether pods can be resized in place: nil, they can; set from the API server's
	// discovery and gate InPlaceWorkloadVerticalScaling (pkg/controller builders).
	Resize *inplace.ResizeSupport
}

// Controller runs Advanced DaemonSets.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	daemonSets   kruiselisters.DaemonSetLister
	pods         corelisters.PodLister
	podIndex     cache.Indexer
	nodes        corelisters.NodeLister
	history      *revision.History
	updater      *inplace.Updater
	expect       *expectations.Scale
	// podVersions holds back in-place updates of a pod until the cache shows the last write.
	podVersions *expectations.ResourceVersions
	failedPods  *flowcontrol.Backoff
	recorder    record.EventRecorder
	clock       clock.WithTicker
	queue       workqueue.TypedRateLimitingInterface[string]
	// podEvents turns pod events into work and expectations.
	podEvents ownership.PodEvents
	// preDownloads carries out image pre-download; nil unless Config.PreDownloadImages.
	preDownloads *predownload.Jobs
	// budgetWaits reports pods waiting for a PodUnavailableBudget, once per reason.
	budgetWaits *budgetwait.Reporter
	// resize says whether pods can be resized (Config.Resize).
	resize *inplace.ResizeSupport
}

// New builds the controller and registers its index and event handlers. It does not call the
// API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.DaemonSets == nil || cfg.Pods == nil || cfg.Nodes == nil || cfg.Revisions == nil {
		return nil, errors.New("daemonset: Client, KruiseClient, DaemonSets, Pods, Nodes and Revisions are required")
	}
	clk := cfg.ClockOrReal()
	backoff := flowcontrol.NewBackOff(failedPodBackoffInitial, failedPodBackoffMax)
	backoff.Clock = clk
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		daemonSets:   cfg.DaemonSets.Lister(),
		pods:         cfg.Pods.Lister(),
		podIndex:     cfg.Pods.Informer().GetIndexer(),
		nodes:        cfg.Nodes.Lister(),
		history:      revision.NewHistory(cfg.Client, cfg.Revisions.Lister()),
		updater:      inplace.NewUpdaterFor(inplace.NewPodClient(cfg.Client), clk, retry.DefaultRetry).WithBudget(cfg.Budget),
		expect:       expectations.NewScale(clk, expectationTimeout),
		podVersions:  expectations.NewResourceVersions(clk, expectationTimeout),
		failedPods:   backoff,
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
		budgetWaits:  budgetwait.NewReporter(),
		resize:       cfg.Resize,
	}
	var err error
	if c.preDownloads, err = cfg.Option.Jobs(cfg.Client, cfg.KruiseClient, controllerKind); err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	if _, err := cfg.DaemonSets.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueue, c.daemonSetDeleted)); err != nil {
		return nil, fmt.Errorf("adding the DaemonSet event handler: %w", err)
	}
	c.podEvents = ownership.PodEvents{
		Kind: controllerKind, Adopters: c.enqueueMatching, Queue: c.queue, Expect: c.expect, Versions: c.podVersions,
		Get: func(ns, name string) (metav1.Object, error) { return c.daemonSets.DaemonSets(ns).Get(name) },
	}
	if err := c.podEvents.Register(cfg.Pods.Informer()); err != nil {
		return nil, err
	}
	if _, err := cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.nodeAdded,
		UpdateFunc: c.nodeUpdated,
		DeleteFunc: func(any) { c.enqueueAll() },
	}); err != nil {
		return nil, fmt.Errorf("adding the node event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes DaemonSets with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "daemonSet"}
}
