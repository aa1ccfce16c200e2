package podprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
)

// DefaultWriteDelay gathers the results that change within it into one
// status write.
const DefaultWriteDelay = 50 * time.Millisecond

// nodeAddrsTTL is how long the node's interface addresses are reused.
const nodeAddrsTTL = 30 * time.Second

// The queue's keys: the spec to reconcile the workers with, and the status
// to write.
const (
	keySpec   = "spec"
	keyStatus = "status"
)

// Config is what the prober is built from.
type Config struct {
	// Client patches the NodePodProbe's status.
	Client   kube.NodePodProbeClient
	NodeName string
	// NodePodProbes is an informer on this node's NodePodProbe only.
	NodePodProbes cache.SharedIndexInformer
	// Pods is the informer on this node's pods.
	Pods    cache.SharedIndexInformer
	Runtime Execer
	// Clock times the workers and the status queue; nil is the real clock.
	Clock clock.WithTicker
	// Rand is the jitter's source, in [0, 1); nil is math/rand.
	Rand func() float64
	// NodeAddrs lists the node's addresses for the guard; nil reads the
	// interfaces' addresses (kruise-daemon is on the host network).
	NodeAddrs func() ([]netip.Addr, error)
	// WriteDelay coalesces status writes; zero is DefaultWriteDelay.
	WriteDelay time.Duration
	Metrics    *Metrics
}

// Controller runs the workers of its node's NodePodProbe and writes the
// results.
type Controller struct {
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[string]
	env   *workerEnv

	mu      sync.Mutex
	workers map[key]*running

	// written is the status this daemon last wrote, and to which object:
	// only the daemon writes the status, so it is what the server holds
	// even while the informer has not caught up.
	written *writtenStatus

	addrsMu   sync.Mutex
	addrs     []netip.Addr
	addrsTime time.Time
}

type running struct {
	w    *worker
	stop context.CancelFunc
}

type writtenStatus struct {
	uid    types.UID
	status appsv1alpha1.NodePodProbeStatus
}

// New makes the prober; Run starts it.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.NodePodProbes == nil || cfg.Pods == nil || cfg.Runtime == nil || cfg.NodeName == "" {
		return nil, errors.New("podprobe: client, informers, runtime and node name are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.WriteDelay <= 0 {
		cfg.WriteDelay = DefaultWriteDelay
	}
	if cfg.NodeAddrs == nil {
		cfg.NodeAddrs = interfaceAddrs
	}
	c := &Controller{
		cfg: cfg,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 50*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodepodprobe", Clock: cfg.Clock}),
		workers: map[key]*running{},
	}
	c.env = &workerEnv{
		node:      cfg.NodeName,
		pod:       c.pod,
		runtime:   cfg.Runtime,
		now:       cfg.Clock.Now,
		nodeAddrs: c.nodeAddrs,
		metrics:   cfg.Metrics,
		changed:   func() { c.queue.AddAfter(keyStatus, cfg.WriteDelay) },
	}
	_, err := cfg.NodePodProbes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.queue.Add(keySpec) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*appsv1alpha1.NodePodProbe)
			n, ok2 := newObj.(*appsv1alpha1.NodePodProbe)
			if ok1 && ok2 && o.UID == n.UID && equality.Semantic.DeepEqual(o.Spec, n.Spec) {
				return // our own status write coming back
			}
			c.queue.Add(keySpec)
		},
		DeleteFunc: func(any) { c.queue.Add(keySpec) },
	})
	if err != nil {
		return nil, fmt.Errorf("adding the NodePodProbe event handler: %w", err)
	}
	return c, nil
}

// Run reconciles the workers with the spec and writes the status until ctx
// ends; the informers must have synced.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting the node prober", "node", c.cfg.NodeName)
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	c.queue.Add(keySpec)
	for c.processNext(ctx) {
	}
	c.mu.Lock()
	for k, r := range c.workers {
		r.stop()
		delete(c.workers, k)
	}
	c.mu.Unlock()
	logger.Info("Node prober stopped")
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	item, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(item)
	var err error
	switch item {
	case keySpec:
		c.syncWorkers(ctx)
		c.queue.AddAfter(keyStatus, c.cfg.WriteDelay)
	case keyStatus:
		err = c.writeStatus(ctx)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Writing the NodePodProbe status; retrying", "node", c.cfg.NodeName)
		c.queue.AddRateLimited(item)
		return true
	}
	c.queue.Forget(item)
	return true
}

// nodePodProbe is this node's NodePodProbe from the informer, nil when
// there is none.
func (c *Controller) nodePodProbe() *appsv1alpha1.NodePodProbe {
	obj, ok, err := c.cfg.NodePodProbes.GetStore().GetByKey(c.cfg.NodeName)
	if err != nil || !ok {
		return nil
	}
	npp, _ := obj.(*appsv1alpha1.NodePodProbe)
	return npp
}

// syncWorkers starts a worker for each probe of the spec that has none,
// replaces those whose probe changed and stops those that left it.
func (c *Controller) syncWorkers(ctx context.Context) {
	want := map[key]job{}
	if npp := c.nodePodProbe(); npp != nil {
		want = jobs(&npp.Spec)
	}
	logger := klog.FromContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, r := range c.workers {
		if j, ok := want[k]; ok && r.w.job.same(j) {
			continue
		}
		r.stop()
		delete(c.workers, k)
		logger.V(2).Info("Stopped probe worker", "podUID", k.uid, "probe", k.probe)
	}
	for k, j := range want {
		if _, ok := c.workers[k]; ok {
			continue
		}
		w := newWorker(c.env, j)
		wctx, stop := context.WithCancel(ctx)
		c.workers[k] = &running{w: w, stop: stop}
		wait := jitter(seconds(j.probe.PeriodSeconds), c.cfg.Rand)
		go w.loop(wctx, c.cfg.Clock, wait)
		logger.V(2).Info("Started probe worker", "pod", klog.KRef(j.namespace, j.pod), "podUID", k.uid, "probe", k.probe)
	}
}

// result is the reported result of the worker of k.
func (c *Controller) result(k key) (result, bool) {
	c.mu.Lock()
	r, ok := c.workers[k]
	c.mu.Unlock()
	if !ok {
		return result{}, false
	}
	return r.w.current()
}

// writeStatus writes the status the spec and the workers' results make,
// unless the server has it already.
func (c *Controller) writeStatus(ctx context.Context) error {
	npp := c.nodePodProbe()
	if npp == nil {
		return nil
	}
	held := npp.Status
	if c.written != nil && c.written.uid == npp.UID {
		held = c.written.status
	}
	want := buildStatus(&npp.Spec, &held, c.result)
	if equality.Semantic.DeepEqual(normalize(held), normalize(want)) {
		return nil
	}
	patch, err := statusPatch(want)
	if err != nil {
		return err
	}
	out, err := c.cfg.Client.Patch(ctx, npp.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	c.cfg.Metrics.wrote(err)
	if apierrors.IsNotFound(err) {
		return nil // deleted: its next one starts anew
	}
	if err != nil {
		return fmt.Errorf("patching the status of NodePodProbe %s: %w", npp.Name, err)
	}
	c.written = &writtenStatus{uid: out.UID, status: want}
	klog.FromContext(ctx).V(2).Info("Wrote the NodePodProbe status", "node", npp.Name, "pods", len(want.PodProbeStatuses))
	return nil
}

// normalize makes an empty list and none compare equal.
func normalize(s appsv1alpha1.NodePodProbeStatus) appsv1alpha1.NodePodProbeStatus {
	if len(s.PodProbeStatuses) == 0 {
		s.PodProbeStatuses = nil
	}
	return s
}

// statusPatch replaces the whole list (a merge patch replaces lists), with
// null for none: an empty list would be left out and change nothing.
func statusPatch(s appsv1alpha1.NodePodProbeStatus) ([]byte, error) {
	var list any
	if len(s.PodProbeStatuses) > 0 {
		list = s.PodProbeStatuses
	}
	raw, err := json.Marshal(map[string]any{"status": map[string]any{"podProbeStatuses": list}})
	if err != nil {
		return nil, fmt.Errorf("encoding the NodePodProbe status: %w", err)
	}
	return raw, nil
}

// pod reads a pod from this node's pod informer.
func (c *Controller) pod(namespace, name string) *corev1.Pod {
	obj, ok, err := c.cfg.Pods.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// nodeAddrs are the node's addresses, read again after nodeAddrsTTL. When
// they cannot be read the last ones stay; nil (never read) makes the guard
// refuse every address.
func (c *Controller) nodeAddrs() []netip.Addr {
	c.addrsMu.Lock()
	defer c.addrsMu.Unlock()
	now := c.cfg.Clock.Now()
	if c.addrs != nil && now.Sub(c.addrsTime) < nodeAddrsTTL {
		return c.addrs
	}
	addrs, err := c.cfg.NodeAddrs()
	if err != nil {
		return c.addrs
	}
	c.addrs, c.addrsTime = addrs, now
	if c.addrs == nil {
		c.addrs = []netip.Addr{}
	}
	return c.addrs
}
