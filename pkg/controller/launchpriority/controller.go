// Package launchpriority is the barrier controller of container launch
// priority. The pod webhook (pkg/webhook/priorityinjection) gives every regular
// container below a pod's highest priority an env var read from key
// p_<priority> of the pod's barrier ConfigMap; the kubelet cannot create such
// a container until the key exists. This controller creates the ConfigMap,
// owned by the pod, with the key of the highest priority, and adds each next
// key once every container of higher priority is Ready, telling the kubelet
// through the pod annotation apps.kruise.io/container-launch-priority-released
// so that it starts the released containers at once; with all keys in it
// marks the pod apps.kruise.io/container-launch-priority-completed=true.
// Keys are never removed, so restarts and in-place updates start at once.
//
// The decision is read from the pod's containers (their barrier env vars
// cannot change) and its status, and from the ConfigMap as the API server
// holds it: no memory is needed across syncs or replicas, apart from which
// Warning Events were recorded. docs/design/launch-priority.md has the
// design.
package launchpriority

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "launchpriority"

const (
	// DefaultSlowAfter is how long after its pod started a container of
	// higher priority may take to become Ready before a Warning Event
	// names it.
	DefaultSlowAfter = 5 * time.Minute
	// DefaultRecheck is how often the ConfigMap of a pod that waits is
	// read again without a pod event, so that one deleted meanwhile is
	// recreated.
	DefaultRecheck = time.Minute
)

// Event reasons, all Warnings on the pod.
const (
	// ReasonBlocked: a container of higher priority is not Ready within
	// SlowAfter; the containers below it keep waiting.
	ReasonBlocked = "LaunchPriorityBlocked"
	// ReasonInvalidBarrier: the pod's barrier env vars are not ones kruise
	// writes; nothing is released.
	ReasonInvalidBarrier = "InvalidLaunchBarrier"
	// ReasonBarrierConflict: the barrier ConfigMap exists and belongs to
	// something else; kruise does not write it.
	ReasonBarrierConflict = "LaunchBarrierConflict"
)

// Config is what the controller is built from.
type Config struct {
	Client kubernetes.Interface
	Pods   coreinformers.PodInformer
	// SlowAfter defaults to DefaultSlowAfter; Recheck to DefaultRecheck.
	SlowAfter time.Duration
	Recheck   time.Duration
	// Recorder records Events on pods; nil makes one, started by Run.
	Recorder record.EventRecorder
	// Clock reads the time; nil is the real clock.
	Clock clock.WithTicker
}

// Controller releases the launch priorities of pods.
type Controller struct {
	client    kubernetes.Interface
	podLister corelisters.PodLister
	slowAfter time.Duration
	recheck   time.Duration
	recorder  record.EventRecorder
	clock     clock.WithTicker
	queue     workqueue.TypedRateLimitingInterface[string]

	// reported remembers, per pod UID, the Events recorded, so a pod synced
	// many times warns once (per process).
	reportedMu sync.Mutex
	reported   map[string]map[string]bool
}

// New builds the controller and registers its event handlers. It does not
// call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Pods == nil {
		return nil, errors.New("launchpriority: Client and Pods are required")
	}
	if cfg.SlowAfter < 0 || cfg.Recheck < 0 {
		return nil, fmt.Errorf("launchpriority: SlowAfter (%v) and Recheck (%v) must not be negative", cfg.SlowAfter, cfg.Recheck)
	}
	if cfg.SlowAfter == 0 {
		cfg.SlowAfter = DefaultSlowAfter
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = DefaultRecheck
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		client:    cfg.Client,
		podLister: cfg.Pods.Lister(),
		slowAfter: cfg.SlowAfter,
		recheck:   cfg.Recheck,
		recorder:  cfg.Recorder,
		clock:     clk,
		queue:     workers.NewQueue(Name, clk),
		reported:  map[string]map[string]bool{},
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(_, cur any) { c.podChanged(cur) },
		DeleteFunc: c.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes pods with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n, "slowAfter", c.slowAfter, "recheck", c.recheck)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "pod"}
}

// podChanged queues a live pod with a barrier that is not completed, or
// whose barrier a container cannot read (a completed pod's ConfigMap
// deleted, seen when a container restarts). Every other pod costs a scan of
// its containers' env vars.
func (c *Controller) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !live(pod) || !hasBarrier(pod) {
		return
	}
	if pod.Annotations[lp.AnnotationCompleted] == lp.KeyValue {
		p, _, err := planOf(pod)
		if err != nil || !configError(pod, p) {
			return
		}
	}
	if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
		c.queue.Add(key)
	}
}

// podDeleted forgets what was reported about the pod. Its ConfigMap is the
// garbage collector's: the pod owns it.
func (c *Controller) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		c.reportedMu.Lock()
		delete(c.reported, string(pod.UID))
		c.reportedMu.Unlock()
	}
}

// live reports whether the pod may still start containers.
func live(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// hasBarrier reports whether a regular container has a barrier env var.
func hasBarrier(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		for _, e := range pod.Spec.Containers[i].Env {
			if e.Name == lp.EnvBarrier {
				return true
			}
		}
	}
	return false
}

// report records a Warning Event on the pod unless this process already
// recorded one with the same reason about the same subject (a container, a
// ConfigMap) for it.
func (c *Controller) report(pod *corev1.Pod, reason, subject, message string) {
	c.reportedMu.Lock()
	seen := c.reported[string(pod.UID)]
	if seen == nil {
		seen = map[string]bool{}
		c.reported[string(pod.UID)] = seen
	}
	dup := seen[reason+"\x00"+subject]
	seen[reason+"\x00"+subject] = true
	c.reportedMu.Unlock()
	if !dup {
		c.recorder.Event(pod, corev1.EventTypeWarning, reason, message)
	}
}
