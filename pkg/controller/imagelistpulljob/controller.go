// Package imagelistpulljob runs v1beta1 ImageListPullJobs: one ImagePullJob
// per listed image, owned (controller reference) by the list job, and the
// list job's status aggregated from theirs. The ImagePullJobs do the pulling
// (pkg/controller/imagepulljob); deleting the list job deletes them through
// the garbage collector.
package imagelistpulljob

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "imagelistpulljob"

// Event reasons recorded on list jobs.
const (
	ReasonCreated   = "CreatedImagePullJob"
	ReasonDeleted   = "DeletedImagePullJob"
	ReasonCompleted = "Completed"
	ReasonFailed    = "Failed"
	// ReasonCreateFailed: an ImagePullJob for one of the images cannot be
	// created (refused by the API server, or its name is taken).
	ReasonCreateFailed = "FailedCreateImagePullJob"
)

const kind = "ImageListPullJob"

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	ListJobs kruiseinformers.ImageListPullJobInformer
	Jobs     kruiseinformers.ImagePullJobInformer
}

// Controller runs ImageListPullJobs.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	listLister   kruiselisters.ImageListPullJobLister
	jobLister    kruiselisters.ImagePullJobLister
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its event handlers. It does not
// call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.ListJobs == nil || cfg.Jobs == nil {
		return nil, errors.New("imagelistpulljob: Client, KruiseClient, ListJobs and Jobs are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		listLister:   cfg.ListJobs.Lister(),
		jobLister:    cfg.Jobs.Lister(),
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
	}
	if _, err := cfg.ListJobs.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueue, c.enqueue)); err != nil {
		return nil, fmt.Errorf("adding ImageListPullJob event handler: %w", err)
	}
	if _, err := cfg.Jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueOwner,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1beta1.ImagePullJob)
			n, ok2 := cur.(*v1beta1.ImagePullJob)
			// Only what the aggregate reads: completion and counters.
			if ok1 && ok2 && apiequality.Semantic.DeepEqual(summary(o), summary(n)) {
				return
			}
			c.enqueueOwner(cur)
		},
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, fmt.Errorf("adding ImagePullJob event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes list jobs with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "imageListPullJob"}, n)
}

func (c *Controller) enqueue(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if l, ok := obj.(*v1beta1.ImageListPullJob); ok {
		c.queue.Add(l.Namespace + "/" + l.Name)
	}
}

func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	j, ok := obj.(*v1beta1.ImagePullJob)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == kind && ref.APIVersion == v1beta1.SchemeGroupVersion.String() {
		c.queue.Add(j.Namespace + "/" + ref.Name)
	}
}

// jobSummary is what the aggregate reads of an ImagePullJob.
type jobSummary struct {
	Completed                  bool
	Desired, Succeeded, Failed int32
	Message                    string
}

func summary(j *v1beta1.ImagePullJob) jobSummary {
	return jobSummary{j.Status.CompletionTime != nil, j.Status.Desired, j.Status.Succeeded, j.Status.Failed, j.Status.Message}
}

// reported reports whether an image counts as completed for the list job:
// its ImagePullJob completed or, with completionPolicy Never (which never
// completes), started and every selected node has a result, failures
// included, as OpenKruise counts it. A later re-pull or a new node makes it
// active again.
func reported(j *v1beta1.ImagePullJob) bool {
	if j.Status.CompletionTime != nil {
		return true
	}
	return j.Spec.CompletionPolicy.Type == v1beta1.Never && j.Status.StartTime != nil &&
		j.Status.Succeeded+j.Status.Failed == j.Status.Desired
}

// Bounds of what the list job repeats of its children's messages.
const (
	maxFailedImageMessage = 512
	maxEventMessage       = 300
)

// truncate cuts s to at most n characters, marking the cut with "...".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-3]) + "..."
}

// children maps image → the list job's ImagePullJob for it.
func (c *Controller) children(list *v1beta1.ImageListPullJob) (map[string]*v1beta1.ImagePullJob, error) {
	all, err := c.jobLister.ImagePullJobs(list.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]*v1beta1.ImagePullJob{}
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == list.UID {
			out[j.Spec.Image] = j
		}
	}
	return out, nil
}

// existingChild reads, live, the object in the way of the list job's
// ImagePullJob for image. It returns it when it is that child: controlled
// by this list job (its UID) and pulling image. Otherwise it returns nil
// and who the object belongs to, for the report.
func (c *Controller) existingChild(ctx context.Context, list *v1beta1.ImageListPullJob, image string) (*v1beta1.ImagePullJob, string, error) {
	name := ChildName(list.Name, image)
	live, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(list.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		// Deleted meanwhile (the next sync creates it again) or not
		// readable now: retried, not reported as taken.
		return nil, "", fmt.Errorf("reading ImagePullJob %s/%s, which exists: %w", list.Namespace, name, err)
	}
	ref := metav1.GetControllerOf(live)
	if ref != nil && ref.UID == list.UID && live.Spec.Image == image {
		klog.FromContext(ctx).V(4).Info("ImagePullJob already created; the cache has not caught up", "imagePullJob", klog.KObj(live))
		return live, "", nil
	}
	if ref == nil {
		return nil, fmt.Sprintf("no controller, image %q", live.Spec.Image), nil
	}
	return nil, fmt.Sprintf("controller %s %s uid %s, image %q", ref.Kind, ref.Name, ref.UID, live.Spec.Image), nil
}

// isTransient reports whether a create failed in a way a plain retry may
// cure (the API server busy, unreachable or timing out).
func isTransient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) ||
		!isAPIStatus(err)
}

func isAPIStatus(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}

// ttlAfter deletes a completed list job ttlSecondsAfterFinished after it
// completed, or says when to look again.
func (c *Controller) ttlAfter(ctx context.Context, list *v1beta1.ImageListPullJob) (time.Duration, error) {
	ttl := list.Spec.CompletionPolicy.TTLSecondsAfterFinished
	if ttl == nil || list.Status.CompletionTime == nil {
		return 0, nil
	}
	at := list.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second)
	if now := c.clock.Now(); now.Before(at) {
		return at.Sub(now), nil
	}
	err := c.kruiseClient.AppsV1beta1().ImageListPullJobs(list.Namespace).Delete(ctx, list.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &list.UID},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	return 0, nil
}
