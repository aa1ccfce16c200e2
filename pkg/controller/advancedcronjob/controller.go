// Package advancedcronjob runs AdvancedCronJobs: at each time of its schedule it creates one
// Job, BroadcastJob or ImageListPullJob from its template (pkg/workload/cronjobs decides which
// run is due and builds the job), applies the concurrency policy, keeps status.active and
// status.lastScheduleTime, and deletes finished jobs beyond the history limits. Between runs it
// waits on its queue until the next scheduled time; nothing polls.
package advancedcronjob

import (
	"context"
	"errors"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
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
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "advancedcronjob"

// Event reasons recorded on AdvancedCronJobs (the built-in CronJob's where it has one).
const (
	ReasonCreated         = "SuccessfulCreate"
	ReasonCreateFailed    = "FailedCreate"
	ReasonDeleted         = "SuccessfulDelete"
	ReasonDeleteFailed    = "FailedDelete"
	ReasonAlreadyActive   = "JobAlreadyActive"
	ReasonMissed          = "MissSchedule"
	ReasonTooMany         = "TooManyMissedTimes"
	ReasonInvalid         = "InvalidSchedule"
	ReasonNoTemplate      = "NoTemplate"
	ReasonPullJobsGateOff = "ImagePullJobGateDisabled"
)

// ownerIndex indexes a job by the UID of the AdvancedCronJob that controls it.
const ownerIndex = "advancedcronjob-owner-uid"

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	CronJobs      kruiseinformers.AdvancedCronJobInformer
	Jobs          batchinformers.JobInformer
	BroadcastJobs kruiseinformers.BroadcastJobInformer
	// ImageListPullJobs is nil when gate ImagePullJobGate or KruiseDaemon is off (no controller would
	// run them): an AdvancedCronJob with an
	// ImageListPullJob template then gets an Event and no jobs.
	ImageListPullJobs kruiseinformers.ImageListPullJobInformer
}

// Controller runs AdvancedCronJobs.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	cronLister   kruiselisters.AdvancedCronJobLister
	indexers     map[v1beta1.TemplateKind]cache.Indexer
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers and indexes. It does not call
// the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.CronJobs == nil || cfg.Jobs == nil || cfg.BroadcastJobs == nil {
		return nil, errors.New("advancedcronjob: Client, KruiseClient, CronJobs, Jobs and BroadcastJobs are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		cronLister:   cfg.CronJobs.Lister(),
		indexers:     map[v1beta1.TemplateKind]cache.Indexer{},
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
	}
	if _, err := cfg.CronJobs.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueue, c.enqueue)); err != nil {
		return nil, fmt.Errorf("adding AdvancedCronJob event handler: %w", err)
	}
	children := map[v1beta1.TemplateKind]cache.SharedIndexInformer{
		v1beta1.JobTemplate:          cfg.Jobs.Informer(),
		v1beta1.BroadcastJobTemplate: cfg.BroadcastJobs.Informer(),
	}
	if cfg.ImageListPullJobs != nil {
		children[v1beta1.ImageListPullJobTemplate] = cfg.ImageListPullJobs.Informer()
	}
	for kind, inf := range children {
		if err := inf.AddIndexers(cache.Indexers{ownerIndex: indexByOwner}); err != nil {
			return nil, fmt.Errorf("indexing %s by AdvancedCronJob: %w", kind, err)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueOwner,
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(cronjobs.Object)
				n, ok2 := cur.(cronjobs.Object)
				// Only a change of state matters: it frees a Forbid run, moves the job
				// to the history or out of status.active.
				if ok1 && ok2 && cronjobs.StateOf(o) == cronjobs.StateOf(n) && o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) {
					return
				}
				c.enqueueOwner(cur)
			},
			DeleteFunc: c.enqueueOwner,
		}); err != nil {
			return nil, fmt.Errorf("adding %s event handler: %w", kind, err)
		}
		c.indexers[kind] = inf.GetIndexer()
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes AdvancedCronJobs with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "advancedCronJob"}, n)
}

func (c *Controller) enqueue(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if a, ok := obj.(*v1beta1.AdvancedCronJob); ok {
		c.queue.Add(a.Namespace + "/" + a.Name)
	}
}

func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if ref := controllerRef(m); ref != nil {
		c.queue.Add(m.GetNamespace() + "/" + ref.Name)
	}
}

// controllerRef is obj's controller reference when it points to an AdvancedCronJob (of either
// served version).
func controllerRef(obj metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != v1beta1.AdvancedCronJobKind || !strings.HasPrefix(ref.APIVersion, v1beta1.SchemeGroupVersion.Group+"/") {
		return nil
	}
	return ref
}

func indexByOwner(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := controllerRef(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// children are the jobs of kind that acj controls, from the cache.
func (c *Controller) children(acj *v1beta1.AdvancedCronJob, kind v1beta1.TemplateKind) ([]cronjobs.Object, error) {
	idx, ok := c.indexers[kind]
	if !ok {
		return nil, nil
	}
	objs, err := idx.ByIndex(ownerIndex, string(acj.UID))
	if err != nil {
		return nil, err
	}
	out := make([]cronjobs.Object, 0, len(objs))
	for _, o := range objs {
		if j, ok := o.(cronjobs.Object); ok && j.GetNamespace() == acj.Namespace {
			out = append(out, j)
		}
	}
	return out, nil
}

var _ cronjobs.Object = &batchv1.Job{}
