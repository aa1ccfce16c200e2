// Package enhancedliveness restarts the containers whose enhanced liveness probe failed (gate
// EnhancedLivenessProbe, with KruiseDaemon). kruise-daemon runs the liveness probes the pod webhook
// (pkg/webhook/livenessinjection) took off the kubelet and reports them in the node's
// NodePodProbe status; this controller answers a Failed probe with a ContainerRecreateRequest,
// one per failure, within a budget per workload (Decide): at most maxUnavailable pods restarting
// or not Ready, a per-container back-off, and no restart at all while more than half of a
// workload's pods fail at once (a shared dependency's outage, not the pods). docs/enhancedliveness.md.
package enhancedliveness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "enhancedliveness"

const (
	// LabelEnhancedLiveness marks the ContainerRecreateRequests this controller creates.
	LabelEnhancedLiveness = "apps.kruise.io/enhanced-liveness"
	// MaxUnavailableAnnotation on a workload's pods (set it in the pod template) bounds how many of
	// them may be restarting or not Ready when one is restarted: an integer or a percentage of the
	// workload's pods (rounded down); at least 1. Default DefaultMaxUnavailable.
	MaxUnavailableAnnotation = "apps.kruise.io/enhanced-liveness-max-unavailable"
	// RestartsAnnotation records on a pod, as JSON (container name -> Restart), each container's
	// last liveness restart: the back-off, and which failure was already answered.
	RestartsAnnotation = "apps.kruise.io/enhanced-liveness-restarts"
)

// Event reasons.
const (
	ReasonRestart      = "EnhancedLivenessRestart"
	ReasonSharedOutage = "EnhancedLivenessSharedOutage"
	ReasonBadBudget    = "EnhancedLivenessInvalidMaxUnavailable"
)

// outageEventEvery rate-limits the shared-outage Warning per workload: an outage lasts, its
// Event need not repeat at every probe flip.
const outageEventEvery = 5 * time.Minute

// podIndex indexes the pods whose liveness kruise carries out by workload key.
const podIndex = "enhancedliveness-workload"

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Pods          coreinformers.PodInformer
	NodePodProbes kruiseinformers.NodePodProbeInformer
	CRRs          kruiseinformers.ContainerRecreateRequestInformer
	// Metrics registers the controller's metrics; nil registers none.
	Metrics prometheus.Registerer
}

// Controller restarts containers whose enhanced liveness probe failed.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	pods         corelisters.PodLister
	podIndexer   cache.Indexer
	probes       kruiselisters.NodePodProbeLister
	crrs         kruiselisters.ContainerRecreateRequestLister
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]

	restarts *prometheus.CounterVec
	held     *prometheus.GaugeVec

	mu sync.Mutex
	// heldBy is, per workload key, the pods held back by reason (summed into held).
	heldBy map[string]map[string]int
	// warned is, per workload key, when its shared outage was last reported.
	warned map[string]time.Time
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Pods == nil || cfg.NodePodProbes == nil || cfg.CRRs == nil {
		return nil, errors.New("enhancedliveness: Client, KruiseClient, Pods, NodePodProbes and CRRs are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		pods:         cfg.Pods.Lister(),
		podIndexer:   cfg.Pods.Informer().GetIndexer(),
		probes:       cfg.NodePodProbes.Lister(),
		crrs:         cfg.CRRs.Lister(),
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_enhanced_liveness_restarts_total",
			Help: "ContainerRecreateRequests created to restart containers whose enhanced liveness probe failed.",
		}, nil),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kruise_enhanced_liveness_held_pods",
			Help: "Pods with a failed enhanced liveness probe not restarted now, by reason: " +
				"Budget (too many of the workload's pods unavailable), Backoff (restarted recently), " +
				"SharedOutage (more than half of the workload's pods failing).",
		}, []string{"reason"}),
		heldBy: map[string]map[string]int{},
		warned: map[string]time.Time{},
	}
	c.restarts.WithLabelValues()
	for _, r := range []string{HeldBudget, HeldBackoff, HeldSharedOutage} {
		c.held.WithLabelValues(r)
	}
	if cfg.Metrics != nil {
		for _, m := range []prometheus.Collector{c.restarts, c.held} {
			if err := cfg.Metrics.Register(m); err != nil {
				return nil, fmt.Errorf("registering enhanced liveness metrics: %w", err)
			}
		}
	}
	if err := cfg.Pods.Informer().AddIndexers(cache.Indexers{podIndex: indexPod}); err != nil {
		return nil, fmt.Errorf("adding pod index %s: %w", podIndex, err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueuePod,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Pod)
			n, ok2 := cur.(*corev1.Pod)
			if ok1 && ok2 && !podChanged(o, n) {
				return
			}
			c.enqueuePod(cur)
		},
		DeleteFunc: c.enqueuePod,
	}); err != nil {
		return nil, fmt.Errorf("adding pod event handler: %w", err)
	}
	if _, err := cfg.NodePodProbes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.probesChanged(nil, obj) },
		UpdateFunc: c.probesChanged,
	}); err != nil {
		return nil, fmt.Errorf("adding NodePodProbe event handler: %w", err)
	}
	if _, err := cfg.CRRs.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueueCRR, c.enqueueCRR)); err != nil {
		return nil, fmt.Errorf("adding ContainerRecreateRequest event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes workloads with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "workload"}, n)
}

// carried says whether kruise carries out the pod's liveness probes: the webhook moved them into
// the probe context annotation.
func carried(pod *corev1.Pod) bool {
	return pod.Annotations[appsv1alpha1.UsingEnhancedLivenessAnnotation] == "true" &&
		pod.Annotations[appsv1alpha1.ContainerProbeContextAnnotation] != ""
}

// WorkloadKey is the queue key of the pod's workload: namespace/uid of its controller
// ownerReference, or of the pod itself when it has none.
func WorkloadKey(pod *corev1.Pod) string {
	uid := pod.UID
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		uid = ref.UID
	}
	return pod.Namespace + "/" + string(uid)
}

func indexPod(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !carried(pod) {
		return nil, nil
	}
	return []string{WorkloadKey(pod)}, nil
}

func (c *Controller) enqueuePod(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok && carried(pod) {
		c.queue.Add(WorkloadKey(pod))
	}
}

// podChanged reports whether an update changes what Decide reads of a pod.
func podChanged(o, n *corev1.Pod) bool {
	return podReady(o) != podReady(n) || o.Status.Phase != n.Status.Phase || o.Spec.NodeName != n.Spec.NodeName ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!apiequality.Semantic.DeepEqual(o.Annotations, n.Annotations)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// probesChanged queues the workloads of the pods whose liveness results changed.
func (c *Controller) probesChanged(old, cur any) {
	n, ok := cur.(*appsv1alpha1.NodePodProbe)
	if !ok {
		return
	}
	before := map[string][]appsv1alpha1.ContainerProbeState{}
	if o, ok := old.(*appsv1alpha1.NodePodProbe); ok {
		for _, s := range o.Status.PodProbeStatuses {
			before[s.UID] = livenessStates(s.ProbeStates)
		}
	}
	for _, s := range n.Status.PodProbeStatuses {
		states := livenessStates(s.ProbeStates)
		if len(states) == 0 && len(before[s.UID]) == 0 {
			continue
		}
		if apiequality.Semantic.DeepEqual(states, before[s.UID]) {
			continue
		}
		pod, err := c.pods.Pods(s.Namespace).Get(s.Name)
		if err != nil || string(pod.UID) != s.UID {
			continue
		}
		c.enqueuePod(pod)
	}
}

// livenessStates are the enhanced liveness entries of states.
func livenessStates(states []appsv1alpha1.ContainerProbeState) []appsv1alpha1.ContainerProbeState {
	var out []appsv1alpha1.ContainerProbeState
	for _, st := range states {
		if p, ok := nodeprobe.ParseProbeName(st.Name); ok && p.IsLiveness() {
			out = append(out, st)
		}
	}
	return out
}

func (c *Controller) enqueueCRR(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok || crr.Labels[LabelEnhancedLiveness] != "true" {
		return
	}
	if pod, err := c.pods.Pods(crr.Namespace).Get(crr.Spec.PodName); err == nil {
		c.enqueuePod(pod)
	}
}

// setHeld records the workload's held pods and updates the gauge.
func (c *Controller) setHeld(key string, held map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(held) == 0 {
		delete(c.heldBy, key)
	} else {
		c.heldBy[key] = held
	}
	for _, r := range []string{HeldBudget, HeldBackoff, HeldSharedOutage} {
		sum := 0
		for _, h := range c.heldBy {
			sum += h[r]
		}
		c.held.WithLabelValues(r).Set(float64(sum))
	}
}

// shouldWarn says whether the workload's shared outage is to be reported now.
func (c *Controller) shouldWarn(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.warned[key]; ok && now.Sub(last) < outageEventEvery {
		return false
	}
	c.warned[key] = now
	return true
}

// forget drops what is remembered of a workload that has no pods left.
func (c *Controller) forget(key string) {
	c.setHeld(key, nil)
	c.mu.Lock()
	delete(c.warned, key)
	c.mu.Unlock()
}
