// Package sidecarterminator lets pods of Jobs (and bare pods) with
// long-running sidecars finish when their main containers do. A sidecar is
// a regular container marked with KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true
// (or a non-empty ..._WITH_IMAGE) in a pod whose restartPolicy is Never or
// OnFailure. docs/design/sidecar-terminator.md explains the mechanisms and
// why recording the pod's phase is the default.
package sidecarterminator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "sidecarterminator"

// Mechanism is how the sidecars of a pod on a real node are stopped.
type Mechanism string

const (
	// MechanismPhase records the pod's terminal phase, decided by its main
	// containers, and lets the kubelet stop the rest (preStop, SIGTERM,
	// the pod's grace period, SIGKILL). The default: the fastest, and the
	// sidecars' exit codes cannot change the outcome.
	MechanismPhase Mechanism = "phase"
	// MechanismCRR issues a ContainerRecreateRequest and lets kruise-daemon
	// stop the sidecars, leaving the pod's status to the kubelet, as
	// OpenKruise does. The sidecars' exit codes then count (see the design
	// doc); for clusters where kruise-controller may not write pod status.
	MechanismCRR Mechanism = "crr"
)

// ParseMechanism checks a --sidecar-termination value.
func ParseMechanism(s string) (Mechanism, error) {
	switch m := Mechanism(s); m {
	case MechanismPhase, MechanismCRR:
		return m, nil
	}
	return "", fmt.Errorf("unknown sidecar termination mechanism %q: want %q or %q", s, MechanismPhase, MechanismCRR)
}

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Pods  coreinformers.PodInformer
	Nodes coreinformers.NodeInformer
	// Mechanism defaults to MechanismPhase.
	Mechanism Mechanism
	// Metrics, if set, receives the controller's metrics.
	Metrics prometheus.Registerer
}

// Controller is the Job sidecar terminator.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	podLister    corelisters.PodLister
	nodeLister   corelisters.NodeLister
	mechanism    Mechanism
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
	terminations *prometheus.CounterVec

	// reported remembers, per pod UID, the Event messages already
	// recorded, so a pod synced many times warns once (per process).
	reportedMu sync.Mutex
	reported   map[string]map[string]bool

	// nudged holds, per pod UID, the AnnotationTerminatedAt value this
	// process last wrote. Until the cache shows it, the cached pod predates
	// our own writes (the informer lags under load) and must not be
	// decided on again.
	nudgedMu sync.Mutex
	nudged   map[string]string
}

// New builds the controller and registers its event handlers. It does not
// call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Pods == nil || cfg.Nodes == nil {
		return nil, errors.New("sidecarterminator: Client, KruiseClient, Pods and Nodes are required")
	}
	if cfg.Mechanism == "" {
		cfg.Mechanism = MechanismPhase
	}
	if _, err := ParseMechanism(string(cfg.Mechanism)); err != nil {
		return nil, err
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		podLister:    cfg.Pods.Lister(),
		nodeLister:   cfg.Nodes.Lister(),
		mechanism:    cfg.Mechanism,
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
		terminations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_sidecar_terminations_total",
			Help: "Pods whose sidecars the sidecar terminator set out to stop, by mechanism: " +
				"phase (pod phase recorded, the kubelet stops them), crr (a ContainerRecreateRequest for kruise-daemon), " +
				"image (virtual-kubelet node: sidecar images replaced).",
		}, []string{"mechanism"}),
		reported: map[string]map[string]bool{},
		nudged:   map[string]string{},
	}
	for _, m := range []string{string(MechanismPhase), string(MechanismCRR), mechanismImage} {
		c.terminations.WithLabelValues(m)
	}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(c.terminations); err != nil {
			return nil, fmt.Errorf("registering sidecar terminator metrics: %w", err)
		}
	}
	// Nodes are only read (is it a virtual-kubelet node?): the informer is
	// requested here so that the factory starts and syncs it.
	cfg.Nodes.Informer()
	if _, err := cfg.Pods.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueuePod, c.podDeleted)); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes pods with workers goroutines until ctx ends. Caches must be
// synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n, "mechanism", c.mechanism)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "pod"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.loop().ProcessNext(ctx)
}

// enqueuePod queues pods that may have sidecars to stop. Most pods are
// Deployments' (restartPolicy Always) or carry no marking: they cost one
// cheap check per event and nothing else.
func (c *Controller) enqueuePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || !hasMarking(pod) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

// podDeleted forgets what was reported about, and written to, the pod.
func (c *Controller) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		c.reportedMu.Lock()
		delete(c.reported, string(pod.UID))
		c.reportedMu.Unlock()
		c.nudgedMu.Lock()
		delete(c.nudged, string(pod.UID))
		c.nudgedMu.Unlock()
	}
}

// setNudged remembers the annotation value written to the pod.
func (c *Controller) setNudged(uid types.UID, value string) {
	c.nudgedMu.Lock()
	defer c.nudgedMu.Unlock()
	c.nudged[string(uid)] = value
}

// cacheBehind reports whether the cached pod does not show the annotation
// this process last wrote to it yet.
func (c *Controller) cacheBehind(pod *corev1.Pod) bool {
	c.nudgedMu.Lock()
	defer c.nudgedMu.Unlock()
	want, ok := c.nudged[string(pod.UID)]
	return ok && pod.Annotations[AnnotationTerminatedAt] != want
}

// report records an Event on the pod unless this process already recorded
// the same message for it.
func (c *Controller) report(pod *corev1.Pod, eventType, reason, message string) {
	c.reportedMu.Lock()
	seen := c.reported[string(pod.UID)]
	if seen == nil {
		seen = map[string]bool{}
		c.reported[string(pod.UID)] = seen
	}
	dup := seen[reason+"\x00"+message]
	seen[reason+"\x00"+message] = true
	c.reportedMu.Unlock()
	if !dup {
		c.recorder.Event(pod, eventType, reason, message)
	}
}

// requeueAfter is a SyncFunc result: look again after d.
func requeueAfter(d time.Duration) (time.Duration, error) { return max(d, time.Second), nil }
