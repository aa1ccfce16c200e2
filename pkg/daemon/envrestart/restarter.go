// Package envrestart restarts, once, the containers whose env is filled
// from the pod's labels or annotations (downward API fieldRefs) when an
// in-place update has changed that metadata: the kubelet resolves such env
// only when it creates a container, and never restarts one for a metadata
// change. It also restarts the containers an in-place update marks for a
// restart (the pod template's kubectl.kubernetes.io/restartedAt changed,
// which the update engine writes as metadata every container must restart
// to see): the instance the state recorded before the update is stopped,
// once. The env a container was created with is read from the container
// runtime's own record (verbose CRI ContainerStatus); nothing is run in the
// container, so images without a shell or an env binary work, and a busy
// node costs one status call per container. A container whose env is out
// of date is stopped the way the CRR executor stops one (preStop hook,
// graceful stop; package recreate), and the kubelet starts a new one that
// reads the pod's current metadata.
package envrestart

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/contract/metadataenv"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/crrexec"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name names the restarter's queue and log lines.
const Name = "env-restarter"

// Event reasons recorded on pods.
const (
	// ReasonRestarted: a container was stopped because its env from
	// metadata was out of date; the kubelet starts it again.
	ReasonRestarted = "ContainerRestartedForEnv"
	// ReasonRestartedForUpdate: a container was stopped because the pod's
	// in-place update restarts it (kubectl.kubernetes.io/restartedAt
	// changed); the kubelet starts it again.
	ReasonRestartedForUpdate = "ContainerRestartedForUpdate"
	// ReasonRestartFailed: stopping it failed; it is tried again.
	ReasonRestartFailed = "ContainerRestartForEnvFailed"
	// ReasonRestartSkipped: its env is out of date, but its pod's
	// restartPolicy is not Always.
	ReasonRestartSkipped = "ContainerRestartForEnvSkipped"
	// ReasonEnvUnknown: the runtime could not say what env the container
	// was created with; it is left running.
	ReasonEnvUnknown = "ContainerEnvUnknown"
)

// Backoff of a pod whose containers cannot be read or stopped.
const (
	minBackoff = time.Second
	maxBackoff = 5 * time.Minute
)

// Runtime is what the restarter reads from the container runtime;
// cri.Runtime has it.
type Runtime interface {
	ContainerInfo(ctx context.Context, id string) (cri.ContainerInfo, error)
}

// Stopper stops a container instance as the CRR executor does: preStop
// hook, then a graceful stop. *recreate.Stopper has it.
type Stopper interface {
	Stop(ctx context.Context, req crrexec.StopRequest) error
}

// Config is what a Restarter is built from.
type Config struct {
	// Pods is the daemon's informer on its node's pods (kube.SlimPod
	// keeps what the restarter reads), not started yet.
	Pods     cache.SharedIndexInformer
	Runtime  Runtime
	Stopper  Stopper
	Recorder recorder.EventRecorder
	Metrics  *Metrics
	// Clock times the queue's backoff; nil is the real clock.
	Clock clock.WithTicker
}

// Restarter watches the pods of its node and restarts the containers
// whose env from metadata an in-place update has made out of date.
type Restarter struct {
	pods     corelisters.PodLister
	runtime  Runtime
	stopper  Stopper
	recorder recorder.EventRecorder
	metrics  *Metrics
	queue    workqueue.TypedRateLimitingInterface[string]
	mem      *memory
	clock    clock.PassiveClock
	// stops are the stop goroutines under way; stopsStarted counts them
	// all, for tests.
	stops        sync.WaitGroup
	stopsStarted atomic.Int64
}

// New builds the restarter and registers its pod event handlers.
func New(cfg Config) (*Restarter, error) {
	if cfg.Pods == nil || cfg.Runtime == nil || cfg.Stopper == nil || cfg.Recorder == nil || cfg.Metrics == nil {
		return nil, errors.New("envrestart: Pods, Runtime, Stopper, Recorder and Metrics are required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &Restarter{
		pods:     corelisters.NewPodLister(cfg.Pods.GetIndexer()),
		runtime:  cfg.Runtime,
		stopper:  cfg.Stopper,
		recorder: cfg.Recorder,
		metrics:  cfg.Metrics,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](minBackoff, maxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: clk}),
		mem:   newMemory(),
		clock: clk,
	}
	if _, err := cfg.Pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.podChanged,
		UpdateFunc: func(_, cur any) { r.podChanged(cur) },
		DeleteFunc: r.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	return r, nil
}

// Run syncs pods with n workers until ctx ends, then waits for the stops
// under way (their context is ctx: they end with it). The pod informer
// must have synced.
func (r *Restarter) Run(ctx context.Context, n int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	klog.FromContext(ctx).Info("Started env-from-metadata restarter", "workers", n)
	r.loop().Run(ctx, n)
	r.stops.Wait()
	return nil
}

func (r *Restarter) loop() workers.Loop {
	return workers.Loop{Queue: r.queue, Sync: r.sync, KeyName: "pod"}
}

// podChanged queues a pod under an env update, and one the restarter
// remembers (to forget it).
func (r *Restarter) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err != nil {
		return
	}
	if st, err := candidate(pod); st != nil || err != nil || r.mem.has(key) {
		r.queue.Add(key)
	}
}

func (r *Restarter) podDeleted(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	r.mem.forget(key)
}

// sync looks at every container of the pod that reads env from metadata.
// It returns an error, for the queue to retry with backoff, when some
// container could not be read.
func (r *Restarter) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := r.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		r.mem.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	ctx = klog.NewContext(ctx, logger)
	st, err := candidate(pod)
	if err != nil {
		// Not retried: a new state comes with a pod update.
		logger.Info("Cannot read the pod's in-place update state; leaving its containers alone", "err", err)
	}
	if st == nil {
		r.mem.forget(key)
		return 0, nil
	}
	restarts := st.restarts()
	var retry []error
	var after time.Duration
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		vars := metadataenv.Vars(c)
		old, restart := restarts[c.Name]
		if len(vars) == 0 && !restart {
			continue
		}
		var v verdict
		if restart {
			v = r.checkRestart(key, pod, c.Name, old)
		}
		if !restart || (v.action == actNone && len(vars) > 0) {
			// Restarted, or never asked to be: its env from metadata may still be stale.
			v = r.check(ctx, key, pod, c, vars)
		}
		switch v.action {
		case actNone:
			r.mem.settle(key, pod.UID, c.Name)
		case actWait:
			logger.V(4).Info("Container not running, or stopped by us; waiting for the kubelet", "container", c.Name, "containerID", v.id)
		case actRestart:
			// The kubelet starts the next container from its own copy of the pod, which it
			// gets by the same watch as this daemon: stopping the container the moment the
			// labels change can beat the kubelet to them, and the new container would start
			// with the old values (and be restarted a second time). A container that reads
			// metadata as env is stopped only once it has been stale for settleDelay; one that
			// reads none has nothing to wait for.
			if len(vars) == 0 {
				r.startStop(ctx, key, pod, c.Name, v)
				continue
			}
			if wait := r.mem.staleFor(key, pod.UID, v.id, r.clock.Now(), settleDelay); wait > 0 {
				after = shortestWait(after, wait)
				continue
			}
			r.startStop(ctx, key, pod, c.Name, v)
		case actSkip:
			r.tell(ctx, key, pod, c.Name, resultSkipped, ReasonRestartSkipped, v.reason)
		case actUnknown:
			if v.runtimeGone {
				logger.Info("Container runtime unavailable; will look again", "container", c.Name, "containerID", v.id, "err", v.err)
			} else {
				r.tell(ctx, key, pod, c.Name, resultUnknown, ReasonEnvUnknown, v.reason)
			}
			retry = append(retry, fmt.Errorf("container %s: %w", c.Name, v.err))
		}
	}
	if len(retry) > 0 {
		return 0, fmt.Errorf("pod %s: %w", key, errors.Join(retry...))
	}
	return after, nil
}

// settleDelay is how long a container must have been seen with out-of-date env before it is
// stopped: time for the kubelet to receive the pod's new labels and annotations too (it takes
// milliseconds on a quiet node, up to a second on a busy one).
const settleDelay = 2 * time.Second

func shortestWait(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

// tell records a Warning Event and counts result, once per container and
// problem: the retries of a problem that stays say nothing more.
func (r *Restarter) tell(ctx context.Context, key string, pod *corev1.Pod, container, result, reason, msg string) {
	if !r.mem.tell(key, pod.UID, container, msg) {
		return
	}
	klog.FromContext(ctx).Info("Not restarting container", "container", container, "reason", reason, "detail", msg)
	r.metrics.count(result)
	r.recorder.Event(pod, corev1.EventTypeWarning, reason, msg)
}
