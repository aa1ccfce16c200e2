package statefulset

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
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/claimupdate"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "statefulset"

// expectationTimeout is how long a create or delete may go unseen by the informers before the
// set is acted on again anyway.
const expectationTimeout = 5 * time.Minute

// Config is what the controller is built from. Informers must not be started yet.
type Config struct {
	ctrlbase.Config
	StatefulSets kruiseinformers.StatefulSetInformer
	Pods         coreinformers.PodInformer
	Claims       coreinformers.PersistentVolumeClaimInformer
	Revisions    appsinformers.ControllerRevisionInformer
	// IgnoreOrdinalsStart reads spec.ordinals.start as 0 (gate StatefulSetStartOrdinal off).
	IgnoreOrdinalsStart bool
	// IgnoreClaimRetention leaves persistentVolumeClaimRetentionPolicy unapplied (gate
	// StatefulSetAutoDeletePVC off): PVCs are created without owners and never re-owned.
	IgnoreClaimRetention bool
	// ResizeClaims acts on volumeClaimUpdateStrategy and writes status.volumeClaims (gate
	// StatefulSetAutoResizePVCGate): see updateClaims.
	ResizeClaims bool
	// NoPodIndexLabel (gate PodIndexLabel off): new pods get no apps.kubernetes.io/pod-index label.
	NoPodIndexLabel bool
	// PreparingUpdateAsUpdate (gate PreparingUpdateAsUpdate): with unorderedUpdate, a pod held in
	// PreparingUpdate keeps its place among the pods to update (RolloutInput).
	PreparingUpdateAsUpdate bool
	// Option's gate is PreDownloadImageForInPlaceUpdate (predownload.go).
	predownload.Option
	// Resize says whether the API server resizes pods (pods/resize, Kubernetes 1.33+); where it
	// does not, a cpu or memory change recreates the pods, or is refused under InPlaceOnly, with
	// the reason. nil: it does.
	Resize *inplace.ResizeSupport
	// Budget is asked before a pod is updated in place (gate PodUnavailableBudgetUpdateGate);
	// the zero Check asks nothing. A pod a budget holds waits, as does one whose deletion the pod
	// webhook refuses for a budget.
	Budget budgetwait.Check
}

// Controller runs Advanced StatefulSets.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	sets         kruiselisters.StatefulSetLister
	pods         corelisters.PodLister
	podIndex     cache.Indexer
	claims       corelisters.PersistentVolumeClaimLister
	history      *revision.History
	updater      *inplace.Updater
	expect       *expectations.Scale
	// podVersions holds back a pod's next update until the cache shows the last one.
	podVersions *expectations.ResourceVersions
	recorder    record.EventRecorder
	clock       clock.WithTicker
	// ignoreOrdinalsStart and ignoreClaimRetention are Config's.
	ignoreOrdinalsStart  bool
	ignoreClaimRetention bool
	// resizeClaims is Config's; expander grows claims for it.
	resizeClaims bool
	expander     *claimupdate.Expander
	// noPodIndexLabel is Config.NoPodIndexLabel.
	noPodIndexLabel bool
	// preparingUpdateAsUpdate is Config.PreparingUpdateAsUpdate.
	preparingUpdateAsUpdate bool
	queue                   workqueue.TypedRateLimitingInterface[string]
	// podEvents turns pod events into work and expectations.
	podEvents ownership.PodEvents
	// preDownloads carries out image pre-download; nil unless Config.PreDownloadImages.
	preDownloads *predownload.Jobs
	// resize says whether pods can be resized (Config.Resize).
	resize *inplace.ResizeSupport
	// budgetWaits reports pods waiting for a PodUnavailableBudget, once per reason.
	budgetWaits *budgetwait.Reporter
}

// New builds the controller and registers its index and event handlers. It does not call the
// API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.StatefulSets == nil || cfg.Pods == nil || cfg.Claims == nil || cfg.Revisions == nil {
		return nil, errors.New("statefulset: Client, KruiseClient, StatefulSets, Pods, Claims and Revisions are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		sets:         cfg.StatefulSets.Lister(),
		pods:         cfg.Pods.Lister(),
		podIndex:     cfg.Pods.Informer().GetIndexer(),
		claims:       cfg.Claims.Lister(),
		history:      revision.NewHistory(cfg.Client, cfg.Revisions.Lister()),
		updater:      inplace.NewUpdaterFor(inplace.NewPodClient(cfg.Client), clk, retry.DefaultRetry).WithBudget(cfg.Budget),
		expect:       expectations.NewScale(clk, expectationTimeout),
		podVersions:  expectations.NewResourceVersions(clk, expectationTimeout),
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),

		ignoreOrdinalsStart:     cfg.IgnoreOrdinalsStart,
		ignoreClaimRetention:    cfg.IgnoreClaimRetention,
		resizeClaims:            cfg.ResizeClaims,
		expander:                &claimupdate.Expander{Client: cfg.Client.CoreV1()},
		noPodIndexLabel:         cfg.NoPodIndexLabel,
		preparingUpdateAsUpdate: cfg.PreparingUpdateAsUpdate,
		resize:                  cfg.Resize,
		budgetWaits:             budgetwait.NewReporter(),
	}
	var err error
	if c.preDownloads, err = cfg.Option.Jobs(cfg.Client, cfg.KruiseClient, controllerKind); err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	if _, err := cfg.StatefulSets.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueue, c.setDeleted)); err != nil {
		return nil, fmt.Errorf("adding the StatefulSet event handler: %w", err)
	}
	c.podEvents = ownership.PodEvents{
		Kind: controllerKind, Adopters: c.enqueueMatching, Queue: c.queue, Expect: c.expect, Versions: c.podVersions,
		Get: func(ns, name string) (metav1.Object, error) { return c.sets.StatefulSets(ns).Get(name) },
	}
	if err := c.podEvents.Register(cfg.Pods.Informer()); err != nil {
		return nil, err
	}
	if _, err := cfg.Claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.claimAdded,
		UpdateFunc: c.claimUpdated,
		DeleteFunc: c.claimDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding the PVC event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes StatefulSets with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "statefulSet"}
}
