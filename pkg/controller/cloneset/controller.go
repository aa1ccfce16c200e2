package cloneset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
const Name = "cloneset"

// expectationTimeout is how long a create or delete may go unseen by the informers before the
// CloneSet is scaled again anyway (and the loss is counted): long enough for a slow watch, short
// enough that a lost event does not stall a CloneSet for long.
const expectationTimeout = 5 * time.Minute

// Config is what the controller is built from. Informers must not be started yet.
type Config struct {
	ctrlbase.Config
	CloneSets kruiseinformers.CloneSetInformer
	Pods      coreinformers.PodInformer
	Claims    coreinformers.PersistentVolumeClaimInformer
	Revisions appsinformers.ControllerRevisionInformer
	// Metrics registers the controller's metrics; nil leaves them unregistered.
	Metrics prometheus.Registerer
	// SkipPodNoise (gate CloneSetEventHandlerOptimization) skips pod updates that change nothing
	// the controller reads.
	SkipPodNoise bool
	// Option's gate is PreDownloadImageForInPlaceUpdate (predownload.go).
	predownload.Option
	// Resize says whether the API server resizes pods (pods/resize, Kubernetes 1.33+); where it
	// does not, a cpu or memory change recreates the pods, or is refused under InPlaceOnly, with
	// the reason. nil: it does.
	Resize *inplace.ResizeSupport
	// PartitionRollback (gate CloneSetPartitionRollback): when the partition grows past the old
	// pods, updated pods go back to the current revision.
	PartitionRollback bool
	// PreparingUpdateAsUpdate (gate PreparingUpdateAsUpdate): the scale pass counts pods in
	// lifecycle state PreparingUpdate as updated.
	PreparingUpdateAsUpdate bool
	// ShortHash (gate CloneSetShortHash): pods' controller-revision-hash label holds only the
	// revision's hash. Both forms are read whatever it says.
	ShortHash bool
	// Budget is asked before a pod is updated in place (gate PodUnavailableBudgetUpdateGate) and
	// before it is marked for recreation (PodUnavailableBudgetDeleteGate); the zero Check asks
	// nothing. A pod a budget holds waits, as does one whose deletion the pod webhook refuses for
	// a budget.
	Budget budgetwait.Check
	// ClaimTemplates acts on changes of volumeClaimTemplates (gate
	// RecreatePodWhenChangeVCTInCloneSetGate): PVCs are expanded to a larger storage request,
	// and a pod whose PVCs differ otherwise is recreated rather than updated in place
	// (volumeclaims.go).
	ClaimTemplates bool
}

// Controller runs CloneSets.
type Controller struct {
	client        kubernetes.Interface
	kruiseClient  versioned.Interface
	cloneSets     kruiselisters.CloneSetLister
	cloneSetIndex cache.Indexer
	pods          corelisters.PodLister
	podIndex      cache.Indexer
	claims        corelisters.PersistentVolumeClaimLister
	claimIndex    cache.Indexer
	history       *revision.History
	updater       *inplace.Updater
	expect        *expectations.Scale
	// podVersions holds back updates of a pod until the cache shows the controller's last
	// write to it: an in-place update started again from a stale copy would record the new
	// container as the old one and never see it restart.
	podVersions *expectations.ResourceVersions
	recorder    record.EventRecorder
	clock       clock.WithTicker
	metrics     *metrics
	queue       workqueue.TypedRateLimitingInterface[string]
	// podEvents turns pod events into work and expectations.
	podEvents ownership.PodEvents
	// preDownloads carries out image pre-download; nil unless Config.PreDownloadImages.
	preDownloads *predownload.Jobs
	// randomID draws a candidate instance ID; nil draws 5 random characters (tests set it).
	randomID func() string
	// stranded are the instance IDs whose PVCs were created for a pod that could not be.
	stranded *strandedClaims
	// resize says whether pods can be resized (Config.Resize).
	resize *inplace.ResizeSupport
	// budget is Config.Budget (the updater asks it too); budgetWaits reports pods waiting for
	// it, once per reason.
	budget      budgetwait.Check
	budgetWaits *budgetwait.Reporter
	// claimTemplates is Config's; expander grows PVCs for it.
	claimTemplates bool
	expander       *claimupdate.Expander
	// The gates of Config.PartitionRollback, PreparingUpdateAsUpdate and ShortHash.
	partitionRollback, preparingUpdateAsUpdate, shortHash bool
}

// New builds the controller and registers its indexes and event handlers. It does not call the
// API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.CloneSets == nil || cfg.Pods == nil || cfg.Claims == nil || cfg.Revisions == nil {
		return nil, errors.New("cloneset: Client, KruiseClient, CloneSets, Pods, Claims and Revisions are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:        cfg.Client,
		kruiseClient:  cfg.KruiseClient,
		cloneSets:     cfg.CloneSets.Lister(),
		cloneSetIndex: cfg.CloneSets.Informer().GetIndexer(),
		pods:          cfg.Pods.Lister(),
		podIndex:      cfg.Pods.Informer().GetIndexer(),
		claims:        cfg.Claims.Lister(),
		claimIndex:    cfg.Claims.Informer().GetIndexer(),
		history:       revision.NewHistory(cfg.Client, cfg.Revisions.Lister()),
		updater:       inplace.NewUpdaterFor(inplace.NewPodClient(cfg.Client), clk, retry.DefaultRetry).WithBudget(cfg.Budget),
		expect:        expectations.NewScale(clk, expectationTimeout),
		podVersions:   expectations.NewResourceVersions(clk, expectationTimeout),
		recorder:      cfg.Recorder,
		clock:         clk,
		queue:         workers.NewQueue(Name, clk),
		stranded:      newStrandedClaims(),
		resize:        cfg.Resize,
		budget:        cfg.Budget,
		budgetWaits:   budgetwait.NewReporter(),

		claimTemplates:          cfg.ClaimTemplates,
		expander:                &claimupdate.Expander{Client: cfg.Client.CoreV1()},
		partitionRollback:       cfg.PartitionRollback,
		preparingUpdateAsUpdate: cfg.PreparingUpdateAsUpdate,
		shortHash:               cfg.ShortHash,
	}
	var err error
	if c.preDownloads, err = cfg.Option.Jobs(cfg.Client, cfg.KruiseClient, controllerKind); err != nil {
		return nil, fmt.Errorf("cloneset: %w", err)
	}
	c.metrics = newMetrics(func() float64 { return float64(c.expect.TimedOut() + c.podVersions.TimedOut()) })
	if cfg.Metrics != nil {
		if err := c.metrics.register(cfg.Metrics); err != nil {
			return nil, fmt.Errorf("registering CloneSet metrics: %w", err)
		}
	}
	if err := ownership.AddIndex(cfg.Claims.Informer(), controllerKind); err != nil {
		return nil, fmt.Errorf("adding the PVC owner index: %w", err)
	}
	if _, err := cfg.CloneSets.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueue, c.cloneSetDeleted)); err != nil {
		return nil, fmt.Errorf("adding the CloneSet event handler: %w", err)
	}
	c.podEvents = ownership.PodEvents{
		Kind: controllerKind, Adopters: c.enqueueMatching, Queue: c.queue, Expect: c.expect, Versions: c.podVersions,
		Get: func(ns, name string) (metav1.Object, error) { return c.cloneSets.CloneSets(ns).Get(name) },
	}
	if cfg.SkipPodNoise {
		c.podEvents.Noise = podNoise
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

// Run processes CloneSets with workers goroutines until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "cloneSet"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.loop().ProcessNext(ctx)
}
