package crrexec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodekruise/kruise/pkg/process/workers"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
)

// ExecutorName names the executor's queue and log lines.
const ExecutorName = "crr-executor"

// Runtime is what the executor needs from the container runtime; cri.Runtime
// has it.
type Runtime interface {
	ExecSyncer
	PodContainers(ctx context.Context, podUID string) ([]cri.Container, error)
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
}

// Config is what an Executor is built from. The informers must be scoped to
// the daemon's node (see docs/design/crr.md) and not started yet: New adds an
// index to the CRR informer. They are plain SharedIndexInformers, not the
// generated informer types, whose packages would link the all-groups
// clientsets into kruise-daemon (see pkg/daemon/kube).
type Config struct {
	KruiseClient kube.CRRGetter
	// CRRs holds *ContainerRecreateRequest objects.
	CRRs cache.SharedIndexInformer
	// Pods holds *corev1.Pod objects with the namespace index
	// (cache.NamespaceIndex).
	Pods    cache.SharedIndexInformer
	Runtime Runtime
	// Recorder records Events on CRRs and pods.
	Recorder recorder.EventRecorder
	Metrics  *Metrics
	// Clock reads the time, times the queue's delays and preStop hooks; nil
	// is the real clock.
	Clock clock.WithTicker
	// PreStop runs preStop hooks; nil builds one on Runtime and Clock.
	PreStop *Runner
}

// Executor carries out the admitted CRRs of one node: it stops the named
// containers (preStop first) and lets the kubelet start them again.
type Executor struct {
	kruiseClient kube.CRRGetter
	crrIndexer   cache.Indexer
	podLister    corelisters.PodLister
	runtime      Runtime
	stopper      *Stopper
	recorder     recorder.EventRecorder
	metrics      *Metrics
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]

	// baseCtx parents the per-CRR contexts; set by Run.
	baseCtx context.Context
	mu      sync.Mutex
	// inflight holds the work under way per CRR UID.
	inflight map[string]*work
	// warned remembers the CRRs already told that their pod lacks the
	// KruisePodReady readiness gate, so the Event is recorded once.
	warned map[string]bool
	// kills are the kill goroutines under way (kill_async.go); killsStarted
	// counts them all, for tests.
	kills        sync.WaitGroup
	killsStarted atomic.Int64
}

// New builds the executor and registers its index and event handlers.
func New(cfg Config) (*Executor, error) {
	if cfg.KruiseClient == nil || cfg.CRRs == nil || cfg.Pods == nil || cfg.Runtime == nil || cfg.Recorder == nil || cfg.Metrics == nil {
		return nil, errors.New("recreate: KruiseClient, CRRs, Pods, Runtime, Recorder and Metrics are required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	runner := cfg.PreStop
	if runner == nil {
		runner = NewRunner(cfg.Runtime, WithClock(clk))
	}
	e := &Executor{
		kruiseClient: cfg.KruiseClient,
		crrIndexer:   cfg.CRRs.GetIndexer(),
		podLister:    corelisters.NewPodLister(cfg.Pods.GetIndexer()),
		runtime:      cfg.Runtime,
		stopper:      NewStopper(cfg.Runtime, runner, clk),
		recorder:     cfg.Recorder,
		metrics:      cfg.Metrics,
		clock:        clk,
		queue:        workers.NewQueue(ExecutorName, clk),
		baseCtx:      context.Background(),
		inflight:     map[string]*work{},
		warned:       map[string]bool{},
	}
	if err := cfg.CRRs.AddIndexers(cache.Indexers{podIndex: indexByPod}); err != nil {
		return nil, fmt.Errorf("adding CRR index: %w", err)
	}
	if _, err := cfg.CRRs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    e.crrAdded,
		UpdateFunc: e.crrUpdated,
		DeleteFunc: e.crrDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding CRR event handler: %w", err)
	}
	if _, err := cfg.Pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    e.podChanged,
		UpdateFunc: func(_, cur any) { e.podChanged(cur) },
		DeleteFunc: e.podChanged,
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	return e, nil
}

// Run processes pods with workers goroutines until ctx ends. Caches must be
// synced.
func (e *Executor) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer utilruntime.HandleCrashWithContext(ctx)
	defer e.queue.ShutDown()

	e.mu.Lock()
	e.baseCtx = ctx
	e.mu.Unlock()

	logger.Info("Started CRR executor workers", "workers", workers)
	e.loop().Run(ctx, workers)
	e.waitKills()
	return nil
}

func (e *Executor) loop() workers.Loop {
	return workers.Loop{Queue: e.queue, Sync: e.syncPod, KeyName: "pod"}
}

// processNextWorkItem handles one queued key (tests drive the loop with it).
func (e *Executor) processNextWorkItem(ctx context.Context) bool {
	return e.loop().ProcessNext(ctx)
}

// event records an Event on the CRR and, when known, on its pod.
func (e *Executor) event(pod *corev1.Pod, crr *appsv1alpha1.ContainerRecreateRequest, eventType, reason, messageFmt string, args ...any) {
	e.recorder.Eventf(crr, eventType, reason, messageFmt, args...)
	if pod != nil {
		e.recorder.Eventf(pod, eventType, reason, messageFmt, args...)
	}
}
