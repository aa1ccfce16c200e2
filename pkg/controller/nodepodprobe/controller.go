// Package nodepodprobe turns the probe results kruise-daemon reports in NodePodProbe statuses into
// pod marks: the condition (podConditionType) and the labels and annotations (markerPolicy) of
// each PodProbeMarker probe that selects the pod. It reconciles one pod at a time; Decide is the
// whole rule. What it set is recorded on the pod (nodeprobe.MarksAnnotation) so that the marks of
// a probe that is removed, a marker that is deleted, or a pod no longer selected are taken off.
// Pods on serverless nodes (gate EnablePodProbeMarkerOnServerless) are marked from their own
// conditions, written by the virtual node.
//
// Only what changes is written: at most one metadata patch and one pods/status patch per pod and
// change, none in steady state. A NodePodProbe status update queues exactly the pods whose results
// changed, so a flip reaches the pod after one queue hop and two API writes at most.
//
// The NodePodProbes' spec and lifecycle, and PodProbeMarker status and finalizer, are another
// controller's.
package nodepodprobe

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "nodepodprobe"

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Pods          coreinformers.PodInformer
	Markers       kruiseinformers.PodProbeMarkerInformer
	NodePodProbes kruiseinformers.NodePodProbeInformer
	// Nodes is needed with Serverless: it tells a virtual-kubelet node.
	Nodes coreinformers.NodeInformer
	// Serverless: gate EnablePodProbeMarkerOnServerless; pods on virtual-kubelet nodes are marked
	// from their own conditions.
	Serverless bool
}

// Controller marks pods with their probe results.
type Controller struct {
	client     kubernetes.Interface
	pods       corelisters.PodLister
	markers    kruiselisters.PodProbeMarkerLister
	npps       kruiselisters.NodePodProbeLister
	nodes      corelisters.NodeLister // nil unless serverless
	recorder   record.EventRecorder
	queue      workqueue.TypedRateLimitingInterface[string]
	serverless bool

	mu sync.Mutex
	// written is, per pod key, the last plan written and the resourceVersion it was decided
	// from: until the cache shows the write, the same plan is not sent again.
	written map[string]writtenPlan
}

type writtenPlan struct {
	uid             types.UID
	resourceVersion string
	plan            string
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Pods == nil || cfg.Markers == nil || cfg.NodePodProbes == nil {
		return nil, errors.New("nodepodprobe: Client, Pods, Markers and NodePodProbes are required")
	}
	if cfg.Serverless && cfg.Nodes == nil {
		return nil, errors.New("nodepodprobe: Serverless needs Nodes")
	}
	c := &Controller{
		client:     cfg.Client,
		pods:       cfg.Pods.Lister(),
		markers:    cfg.Markers.Lister(),
		npps:       cfg.NodePodProbes.Lister(),
		recorder:   cfg.Recorder,
		queue:      workers.NewQueue(Name, cfg.ClockOrReal()),
		serverless: cfg.Serverless,
		written:    map[string]writtenPlan{},
	}
	if cfg.Serverless {
		c.nodes = cfg.Nodes.Lister()
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: c.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("adding Pod event handler: %w", err)
	}
	if _, err := cfg.Markers.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.markerChanged(nil, obj) },
		UpdateFunc: c.markerChanged,
		DeleteFunc: func(obj any) { c.markerChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("adding PodProbeMarker event handler: %w", err)
	}
	if _, err := cfg.NodePodProbes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.resultsChanged(nil, obj) },
		UpdateFunc: c.resultsChanged,
		DeleteFunc: func(obj any) { c.resultsChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("adding NodePodProbe event handler: %w", err)
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run marks pods with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "pod"}, n,
		"serverless", c.serverless)
}

func podOf(obj any) *corev1.Pod {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

func (c *Controller) podAdded(obj any) {
	if pod := podOf(obj); pod != nil && c.concerns(pod) {
		c.queue.Add(pod.Namespace + "/" + pod.Name)
	}
}

func (c *Controller) podUpdated(old, cur any) {
	o, n := podOf(old), podOf(cur)
	if o == nil || n == nil || !podChanged(o, n) || !c.concerns(n) {
		return
	}
	c.queue.Add(n.Namespace + "/" + n.Name)
}

func (c *Controller) podDeleted(obj any) {
	if pod := podOf(obj); pod != nil {
		c.mu.Lock()
		delete(c.written, pod.Namespace+"/"+pod.Name)
		c.mu.Unlock()
	}
}

// concerns reports whether a pod may have marks to set or take off: its namespace has markers,
// or it carries marks.
func (c *Controller) concerns(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[nodeprobe.MarksAnnotation]; ok {
		return true
	}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Reason == Reason {
			return true
		}
	}
	ms, err := c.markers.PodProbeMarkers(pod.Namespace).List(labels.Everything())
	return err == nil && len(ms) > 0
}

// podChanged reports whether an update changes what Decide reads of a pod: labels (selectors,
// marks), the annotations the cache keeps (the record, recorded marks), conditions (marks,
// serverless results), its node, deletion and phase. The kubelet's other status writes are
// ignored.
func podChanged(o, n *corev1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!apiequality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
		!apiequality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
		o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

func markerOf(obj any) *appsv1alpha1.PodProbeMarker {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, _ := obj.(*appsv1alpha1.PodProbeMarker)
	return m
}

// markerChanged queues the pods a marker selects, before and after (old nil: added; cur nil:
// deleted). Updates that change neither its spec nor its deletion are ignored (its status).
func (c *Controller) markerChanged(old, cur any) {
	o, n := markerOf(old), markerOf(cur)
	if o != nil && n != nil && o.Generation == n.Generation &&
		(o.DeletionTimestamp == nil) == (n.DeletionTimestamp == nil) &&
		apiequality.Semantic.DeepEqual(o.Spec, n.Spec) {
		return
	}
	keys := map[string]bool{}
	for _, m := range []*appsv1alpha1.PodProbeMarker{o, n} {
		if m == nil {
			continue
		}
		sel, err := metaSelector(m)
		if err != nil {
			continue
		}
		pods, err := c.pods.Pods(m.Namespace).List(sel)
		if err != nil {
			continue
		}
		for _, p := range pods {
			keys[p.Namespace+"/"+p.Name] = true
		}
	}
	for k := range keys {
		c.queue.Add(k)
	}
}

func nppOf(obj any) *appsv1alpha1.NodePodProbe {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	n, _ := obj.(*appsv1alpha1.NodePodProbe)
	return n
}

// resultsChanged queues the pods whose results differ between two versions of a NodePodProbe's
// status (old nil: added; cur nil: deleted), pods that left it included.
func (c *Controller) resultsChanged(old, cur any) {
	for _, k := range changedPods(nppOf(old), nppOf(cur)) {
		c.queue.Add(k)
	}
}

// changedPods are the keys of the pods whose status entries differ between o and n (by uid and
// probe states), in n's order then o's.
func changedPods(o, n *appsv1alpha1.NodePodProbe) []string {
	before := map[string]*appsv1alpha1.PodProbeStatus{}
	if o != nil {
		for i := range o.Status.PodProbeStatuses {
			before[o.Status.PodProbeStatuses[i].UID] = &o.Status.PodProbeStatuses[i]
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(s *appsv1alpha1.PodProbeStatus) {
		if k := s.Namespace + "/" + s.Name; !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if n != nil {
		for i := range n.Status.PodProbeStatuses {
			s := &n.Status.PodProbeStatuses[i]
			prev, ok := before[s.UID]
			delete(before, s.UID)
			if !ok || prev.Name != s.Name || prev.Namespace != s.Namespace ||
				!apiequality.Semantic.DeepEqual(prev.ProbeStates, s.ProbeStates) {
				add(s)
			}
		}
	}
	if o != nil {
		for i := range o.Status.PodProbeStatuses {
			if s := &o.Status.PodProbeStatuses[i]; before[s.UID] != nil {
				add(s)
			}
		}
	}
	return out
}
