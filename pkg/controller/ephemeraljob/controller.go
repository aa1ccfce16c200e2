// Package ephemeraljob runs EphemeralJobs (apps.kruise.io/v1alpha1): it adds the template's
// ephemeral containers, marked with KRUISE_EJOB_ID=<job uid>, to the pods the selector matches
// (oldest first, at most replicas, parallelism at a time) through the pods/ephemeralcontainers
// subresource, and reports each pod's containers in the job's status until they finish, the
// deadline passes or the job is paused. A finished job is deleted ttlSecondsAfterFinished (1800
// when unset) after it finished.
//
// It acts with its requester's rights, not its own: before adding containers to a pod it asks
// the API server (SubjectAccessReview) whether the user recorded by the mutating webhook
// (pkg/contract/ejobaccess) may exec into that pod and add ephemeral containers to it. A pod the
// requester may not reach counts as failed; a job without a recorded requester, or any job while
// kruise's webhooks are off (nothing vouches for the annotation then), acts on no pod.
//
// Ephemeral containers cannot be removed from a pod: deleting the job only drops its finalizer.
package ephemeraljob

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "ephemeraljob"

// Finalizer is kept on every job until it is deleted (OpenKruise's).
const Finalizer = "apps.kruise.io/ephemeralcontainers-cleanup"

// Event reasons recorded on jobs.
const (
	ReasonAdded        = "AddedEphemeralContainers"
	ReasonAddFailed    = "CreateFailed"
	ReasonForbidden    = "RequesterForbidden"
	ReasonNoRequester  = "NoRequester"
	ReasonWebhooksOff  = "WebhooksOff"
	ReasonNotRemovable = "EphemeralContainersKept"
)

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Jobs kruiseinformers.EphemeralJobInformer
	Pods coreinformers.PodInformer
	// WebhooksOff: kruise-controller serves no webhooks, so nothing vouches for a job's requester
	// annotation (a user could have written it); every job then acts on no pod.
	WebhooksOff bool
}

// Controller runs EphemeralJobs.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	jobs         kruiselisters.EphemeralJobLister
	pods         corelisters.PodLister
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
	webhooksOff  bool

	mu sync.Mutex
	// memo is, per job key, what the controller remembers between syncs.
	memo map[string]*jobMemo
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Jobs == nil || cfg.Pods == nil {
		return nil, errors.New("ephemeraljob: Client, KruiseClient, Jobs and Pods are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		jobs:         cfg.Jobs.Lister(),
		pods:         cfg.Pods.Lister(),
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
		webhooksOff:  cfg.WebhooksOff,
		memo:         map[string]*jobMemo{},
	}
	if _, err := cfg.Jobs.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueue, c.enqueue)); err != nil {
		return nil, fmt.Errorf("adding EphemeralJob event handler: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueuePod(obj, nil) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Pod)
			n, ok2 := cur.(*corev1.Pod)
			if ok1 && ok2 && !podChanged(o, n) {
				return
			}
			c.enqueuePod(cur, old)
		},
		DeleteFunc: func(obj any) { c.enqueuePod(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("adding Pod event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes jobs with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "ephemeralJob"}, n)
}

func (c *Controller) enqueue(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if j, ok := obj.(*appsv1alpha1.EphemeralJob); ok {
		c.queue.Add(j.Namespace + "/" + j.Name)
	}
}

// enqueuePod queues the jobs of the pod's namespace whose selector matches it now or matched it
// before (old).
func (c *Controller) enqueuePod(obj, old any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	var oldLabels labels.Set
	if o, ok := old.(*corev1.Pod); ok {
		oldLabels = o.Labels
	}
	jobs, err := c.jobs.EphemeralJobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, j := range jobs {
		sel, err := selectorOf(j)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) || (oldLabels != nil && sel.Matches(oldLabels)) {
			c.queue.Add(j.Namespace + "/" + j.Name)
		}
	}
}

// podChanged reports whether an update changes what a job reads of a pod.
func podChanged(o, n *corev1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(o.Labels, n.Labels) || o.Status.Phase != n.Status.Phase ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!apiequality.Semantic.DeepEqual(o.Spec.EphemeralContainers, n.Spec.EphemeralContainers) ||
		!apiequality.Semantic.DeepEqual(o.Status.EphemeralContainerStatuses, n.Status.EphemeralContainerStatuses)
}

// jobMemo is what the controller remembers of one job (by uid and generation) between syncs.
type jobMemo struct {
	uid        types.UID
	generation int64
	// access are the answers about the requester and each pod.
	access map[types.UID]answer
	// added are the pods the containers were added to, until the cache shows them.
	added map[types.UID]time.Time
}

// answer is one SubjectAccessReview's result for a pod.
type answer struct {
	allowed bool
	denied  string
	at      time.Time
}

const (
	// allowedFor is how long an allowed answer is used: the containers are added right after
	// the question, so it only saves asking again when a patch is retried. A right revoked since
	// is honoured from then on.
	allowedFor = 30 * time.Second
	// addedFor bounds how long a pod counts as having the containers without the cache showing
	// them (a lost watch event).
	addedFor = time.Minute
)

// memoOf is the job's memo, new when the job is a new one; when its spec changed (a new
// requester, maybe) the answers are dropped, to be asked again, but not what was added.
func (c *Controller) memoOf(key string, job *appsv1alpha1.EphemeralJob) *jobMemo {
	m := c.memo[key]
	if m == nil || m.uid != job.UID {
		m = &jobMemo{uid: job.UID, generation: job.Generation, access: map[types.UID]answer{}, added: map[types.UID]time.Time{}}
		c.memo[key] = m
	}
	if m.generation != job.Generation {
		m.generation, m.access = job.Generation, map[types.UID]answer{}
	}
	return m
}
