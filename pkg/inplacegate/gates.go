// Package inplacegate writes the readiness-gate transitions of in-place updates (release, hold,
// restate: inplace.Action.PodGate) from a queue of pods, as soon as a pod's change shows, instead
// of in the workload's next pass.
//
// The kubelet sets the timing. A gate released before the new container's first passing probe
// lets the pod turn Ready at that probe; released after it, the pod waits for the kubelet's next
// sync of it, up to a second. A workload's pass reads all its pods and writes several, and a
// release queued behind one came 0.2–0.5 s after the kubelet had synced the update. These
// transitions need only the pod, so a worker of their own writes them within one write's time.
// The workload's pass still decides the same (it writes them when this worker has not), and
// the writes carry the pod's resourceVersion: of two writers on one copy, one gets a conflict.
package inplacegate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/expectations"
	"github.com/nodekruise/kruise/pkg/inplace"
	"github.com/nodekruise/kruise/pkg/ownership"
	"github.com/nodekruise/kruise/pkg/workers"
)

// Config is what Gates are built from.
type Config struct {
	// Name names the queue in metrics and logs, e.g. "cloneset-gates".
	Name string
	// Kind is the workload kind whose pods (by controller reference) are handled.
	Kind schema.GroupVersionKind
	// Pods is the workload controller's pod informer; it must not be started yet.
	Pods    coreinformers.PodInformer
	Updater *inplace.Updater
	// Versions are the workload controller's: a pod is handled only once the cache shows the
	// controller's last write to it, and the writes made here are recorded in them, so that
	// the workload's pass waits for them too.
	Versions *expectations.ResourceVersions
	// Clock times the queue and decisions; nil is the real clock.
	Clock clock.WithTicker
}

// Gates is the queue of pods of one workload kind whose readiness gate has a transition due,
// and its workers.
type Gates struct {
	kind     schema.GroupVersionKind
	pods     corelisters.PodLister
	updater  *inplace.Updater
	versions *expectations.ResourceVersions
	clock    clock.WithTicker
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New builds Gates and registers their pod event handler. It does not call the API server.
func New(cfg Config) (*Gates, error) {
	if cfg.Name == "" || cfg.Pods == nil || cfg.Updater == nil || cfg.Versions == nil {
		return nil, errors.New("inplacegate: Name, Pods, Updater and Versions are required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	g := &Gates{kind: cfg.Kind, pods: cfg.Pods.Lister(), updater: cfg.Updater, versions: cfg.Versions,
		clock: clk, queue: workers.NewQueue(cfg.Name, clk)}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    g.offer,
		UpdateFunc: func(_, cur any) { g.offer(cur) },
	}); err != nil {
		return nil, fmt.Errorf("inplacegate: adding the pod event handler: %w", err)
	}
	return g, nil
}

// Run processes pods with n workers until ctx ends. Caches must be synced.
func (g *Gates) Run(ctx context.Context, n int) {
	g.loop().Run(ctx, n)
}

func (g *Gates) loop() workers.Loop {
	return workers.Loop{Queue: g.queue, Sync: g.sync, KeyName: "pod"}
}

// offer queues a pod of the kind whose gate has a transition due.
func (g *Gates) offer(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !g.due(pod) {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
		g.queue.Add(key)
	}
}

// due reports whether pod is the kind's and its in-place update has a gate transition to write.
func (g *Gates) due(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || ownership.Ref(pod, g.kind) == nil || !inplace.DeclaresReadinessGate(pod) {
		return false
	}
	d, err := inplace.Decide(pod, g.clock.Now())
	return err == nil && d.Action.PodGate()
}

// sync writes the transition due on the cached pod named by key. A pod whose last write is not in
// the cache yet, or that changed since it was read, is left: the event of that change offers it
// again.
func (g *Gates) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := g.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	if !g.due(pod) {
		return 0, nil
	}
	if ok, _ := g.versions.Satisfied(ctx, pod); !ok {
		return 0, nil
	}
	res := g.updater.RefreshGate(ctx, pod)
	if res.Pod != nil {
		g.versions.Expect(res.Pod)
	}
	if res.Err != nil && !apierrors.IsConflict(res.Err) && !apierrors.IsNotFound(res.Err) {
		return 0, res.Err
	}
	return 0, nil
}
