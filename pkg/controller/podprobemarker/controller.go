// Package podprobemarker writes each node's NodePodProbe spec: the probes kruise-daemon runs on
// that node. One NodePodProbe per node that is not a virtual-kubelet node (label
// type=virtual-kubelet), named after it and owned by it, created when the node appears, deleted
// when it goes. Its spec is a pure function of the node's pods (active, scheduled, initialized,
// with an IP), the PodProbeMarkers of their namespaces that select them (not being deleted)
// and, with gate EnhancedLivenessProbe, the liveness probes the pod webhook moved into their
// apps.kruise.io/container-probe-context annotation. It is written only when it differs.
//
// The work is done per node (queue key: the node's name); what changes a pod, a marker or a
// node queues only the nodes whose spec may change. A marker's own key (namespace/name) keeps
// its finalizer and status and records, in one Event per change, what was left out of the
// nodes' specs for it.
//
// Not an exec API: a marker's exec probes are listed for a pod only if the marker's requester
// (recorded by its mutating webhook; pkg/contract/nodeprobe) may create pods/exec on that pod,
// asked with a SubjectAccessReview and cached a while (access.go). A marker without a trusted
// requester gets no exec probe. TCP and HTTP probes go only to the pod's own IP, which the
// daemon enforces.
//
// Finalizer kruise.io/node-pod-probe-cleanup: kept on every marker until no NodePodProbe lists
// a probe of it and no active pod of its namespace records marks of it (the marker controller
// takes those off).
package podprobemarker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
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
const Name = "podprobemarker"

// nodeIndex indexes pods by spec.nodeName (prefixed: the pod informer is shared).
const nodeIndex = "podprobemarker.apps.kruise.io/node"

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	Pods          coreinformers.PodInformer
	Nodes         coreinformers.NodeInformer
	NodePodProbes kruiseinformers.NodePodProbeInformer
	// Markers are the PodProbeMarkers; nil when gate PodProbeMarkerGate is off (then only the
	// enhanced liveness probes are listed).
	Markers kruiseinformers.PodProbeMarkerInformer
	// Liveness: gate EnhancedLivenessProbe is on.
	Liveness bool
	// WebhooksOff: kruise-controller serves no webhooks, so nothing vouches for a marker's
	// requester annotation; no exec probe is listed.
	WebhooksOff bool
}

// Controller writes the NodePodProbe specs and keeps the markers' finalizer and status.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	pods         corelisters.PodLister
	podIndexer   cache.Indexer
	nodes        corelisters.NodeLister
	npps         kruiselisters.NodePodProbeLister
	markers      kruiselisters.PodProbeMarkerLister // nil: gate off
	liveness     bool
	webhooksOff  bool
	recorder     record.EventRecorder
	clock        clock.WithTicker
	queue        workqueue.TypedRateLimitingInterface[string]
	gate         *gate

	mu sync.Mutex
	// problems are, per marker key, node and Event reason, what that node's spec left out.
	problems map[string]map[string]map[string][]string
	// reported are, per marker key and reason, the summary last recorded as an Event.
	reported map[string]map[string]string
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.Pods == nil || cfg.Nodes == nil || cfg.NodePodProbes == nil {
		return nil, errors.New("podprobemarker: Client, KruiseClient, Pods, Nodes and NodePodProbes are required")
	}
	clk := cfg.ClockOrReal()
	c := &Controller{
		client:       cfg.Client,
		kruiseClient: cfg.KruiseClient,
		pods:         cfg.Pods.Lister(),
		podIndexer:   cfg.Pods.Informer().GetIndexer(),
		nodes:        cfg.Nodes.Lister(),
		npps:         cfg.NodePodProbes.Lister(),
		liveness:     cfg.Liveness,
		webhooksOff:  cfg.WebhooksOff,
		recorder:     cfg.Recorder,
		clock:        clk,
		queue:        workers.NewQueue(Name, clk),
		gate:         newGate(cfg.Client.AuthorizationV1().SubjectAccessReviews(), clk),
		problems:     map[string]map[string]map[string][]string{},
		reported:     map[string]map[string]string{},
	}
	if cfg.Markers != nil {
		c.markers = cfg.Markers.Lister()
	}
	pods := cfg.Pods.Informer()
	if _, ok := pods.GetIndexer().GetIndexers()[nodeIndex]; !ok {
		if err := pods.AddIndexers(cache.Indexers{nodeIndex: indexByNode}); err != nil {
			return nil, fmt.Errorf("adding pod index %s: %w", nodeIndex, err)
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: c.podChanged,
		DeleteFunc: func(obj any) { c.podChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("adding Pod event handler: %w", err)
	}
	if _, err := cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNode,
		UpdateFunc: c.nodeUpdated,
		DeleteFunc: c.enqueueNode,
	}); err != nil {
		return nil, fmt.Errorf("adding Node event handler: %w", err)
	}
	if _, err := cfg.NodePodProbes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nppChanged(nil, obj) },
		UpdateFunc: c.nppChanged,
		DeleteFunc: func(obj any) { c.nppChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("adding NodePodProbe event handler: %w", err)
	}
	if cfg.Markers != nil {
		if _, err := cfg.Markers.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.markerChanged(nil, obj) },
			UpdateFunc: c.markerChanged,
			DeleteFunc: func(obj any) { c.markerChanged(obj, nil) },
		}); err != nil {
			return nil, fmt.Errorf("adding PodProbeMarker event handler: %w", err)
		}
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run processes nodes and markers with n workers until ctx ends. Caches must be synced.
func (c *Controller) Run(ctx context.Context, n int) error {
	return ctrlbase.Run(ctx, c.client, &c.recorder, c.loop(), n, "liveness", c.liveness, "markers", c.markers != nil)
}

func (c *Controller) loop() workers.Loop {
	return workers.Loop{Queue: c.queue, Sync: c.sync, KeyName: "key"}
}

// sync dispatches a key: a node's name has no "/", a marker's key is namespace/name.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	if strings.Contains(key, "/") {
		return c.syncMarker(ctx, key)
	}
	return c.syncNode(ctx, key)
}

func indexByNode(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}

func untomb(obj any) any {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

// podChanged queues, for an add (old nil), update or delete (cur nil), the nodes whose spec
// may change and the markers whose status or finalizer may.
func (c *Controller) podChanged(oldObj, curObj any) {
	old, _ := untomb(oldObj).(*corev1.Pod)
	cur, _ := untomb(curObj).(*corev1.Pod)
	if old == nil && cur == nil {
		return
	}
	if old != nil && cur != nil && !specInputChanged(old, cur) {
		return
	}
	for _, p := range []*corev1.Pod{old, cur} {
		if p != nil && p.Spec.NodeName != "" {
			c.queue.Add(p.Spec.NodeName)
		}
	}
	ns := cmpOr(cur, old).Namespace
	if old == nil || cur == nil || !maps.Equal(old.Labels, cur.Labels) || counted(old) != counted(cur) {
		c.enqueueMarkersOf(ns, old, cur)
	}
	// Marks taken off (or the pod gone) may free a marker being deleted.
	for _, m := range goneMarks(old, cur) {
		c.queue.Add(ns + "/" + m)
	}
}

func cmpOr(a, b *corev1.Pod) *corev1.Pod {
	if a != nil {
		return a
	}
	return b
}

// specInputChanged reports whether an update changes what a node's spec or a marker's status
// reads of a pod: heartbeats of the kubelet (container statuses) and other controllers'
// writes cost nothing.
func specInputChanged(o, n *corev1.Pod) bool {
	return o.UID != n.UID || o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase ||
		o.Status.PodIP != n.Status.PodIP || initialized(o) != initialized(n) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || !maps.Equal(o.Labels, n.Labels) ||
		o.Annotations[appsv1alpha1.ContainerProbeContextAnnotation] != n.Annotations[appsv1alpha1.ContainerProbeContextAnnotation] ||
		o.Annotations[nodeprobe.MarksAnnotation] != n.Annotations[nodeprobe.MarksAnnotation]
}

// goneMarks are the markers whose marks old records and cur does not.
func goneMarks(old, cur *corev1.Pod) []string {
	if old == nil {
		return nil
	}
	before := markersMarking(old)
	if cur != nil && active(cur) {
		for m := range markersMarking(cur) {
			delete(before, m)
		}
	}
	return slices.Sorted(maps.Keys(before))
}

// markersMarking are the names of the markers whose marks a pod records.
func markersMarking(pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	marks, _ := nodeprobe.ReadMarks(pod.Annotations)
	for name := range marks {
		if p, ok := nodeprobe.ParseProbeName(name); ok && !p.IsLiveness() {
			out[p.Marker] = true
		}
	}
	return out
}

// enqueueMarkersOf queues the markers of namespace ns that select old or cur.
func (c *Controller) enqueueMarkersOf(ns string, old, cur *corev1.Pod) {
	if c.markers == nil {
		return
	}
	ppms, err := c.markers.PodProbeMarkers(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ppm := range ppms {
		m, err := markerOf(ppm, c.webhooksOff)
		if err != nil {
			continue
		}
		if (old != nil && m.selector.Matches(labels.Set(old.Labels))) || (cur != nil && m.selector.Matches(labels.Set(cur.Labels))) {
			c.queue.Add(m.key)
		}
	}
}

// markerChanged queues a marker's key and the nodes of the pods its old or new selector
// matches, when what the specs read of it changed (not for its status, which this controller
// writes).
func (c *Controller) markerChanged(oldObj, curObj any) {
	old, _ := untomb(oldObj).(*appsv1alpha1.PodProbeMarker)
	cur, _ := untomb(curObj).(*appsv1alpha1.PodProbeMarker)
	if old == nil && cur == nil {
		return
	}
	specs := old == nil || cur == nil || specInputOf(old, cur)
	if !specs && old.Generation == cur.Generation && slices.Equal(old.Finalizers, cur.Finalizers) {
		return
	}
	for _, p := range []*appsv1alpha1.PodProbeMarker{old, cur} {
		if p == nil {
			continue
		}
		c.queue.Add(p.Namespace + "/" + p.Name)
		if !specs {
			continue // the finalizer or generation: the marker's own key only
		}
		for _, node := range c.nodesSelectedBy(p) {
			c.queue.Add(node)
		}
	}
}

// specInputOf reports whether an update changes what the nodes' specs read of a marker: its
// spec, requester or deletion.
func specInputOf(o, n *appsv1alpha1.PodProbeMarker) bool {
	return o.UID != n.UID || !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) ||
		o.Annotations[nodeprobe.RequesterAnnotation] != n.Annotations[nodeprobe.RequesterAnnotation] ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// nodesSelectedBy are the nodes of the pods ppm's selector matches.
func (c *Controller) nodesSelectedBy(ppm *appsv1alpha1.PodProbeMarker) []string {
	m, err := markerOf(ppm, c.webhooksOff)
	if err != nil {
		return nil
	}
	pods, err := c.pods.Pods(ppm.Namespace).List(m.selector)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			seen[p.Spec.NodeName] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func (c *Controller) enqueueNode(obj any) {
	if node, ok := untomb(obj).(*corev1.Node); ok {
		c.queue.Add(node.Name)
	}
}

// nodeUpdated queues a node whose virtual-kubelet label (or identity) changed; heartbeats cost
// nothing.
func (c *Controller) nodeUpdated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	cur, ok2 := curObj.(*corev1.Node)
	if ok1 && ok2 && old.UID == cur.UID && isVirtual(old) == isVirtual(cur) {
		return
	}
	c.enqueueNode(curObj)
}

// nppChanged queues the node of a NodePodProbe added, deleted or whose spec changed (someone
// else's edit is undone; our own writes come back as a no-op), and the markers whose probes
// left it (a marker being deleted may be freed).
func (c *Controller) nppChanged(oldObj, curObj any) {
	old, _ := untomb(oldObj).(*appsv1alpha1.NodePodProbe)
	cur, _ := untomb(curObj).(*appsv1alpha1.NodePodProbe)
	switch {
	case old == nil && cur == nil:
		return
	case old != nil && cur != nil && apiequality.Semantic.DeepEqual(old.Spec, cur.Spec) &&
		(old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil):
		return // a status update: the daemon's
	}
	name := ""
	if cur != nil {
		name = cur.Name
	} else {
		name = old.Name
	}
	c.queue.Add(name)
	if old == nil {
		return
	}
	before := markersListed(old.Spec)
	if cur != nil {
		for k := range markersListed(cur.Spec) {
			delete(before, k)
		}
	}
	for k := range before {
		c.queue.Add(k)
	}
}

// markersListed are the keys (namespace/name) of the markers with a probe in spec.
func markersListed(spec appsv1alpha1.NodePodProbeSpec) map[string]bool {
	out := map[string]bool{}
	for _, pp := range spec.PodProbes {
		for _, p := range pp.Probes {
			if parsed, ok := nodeprobe.ParseProbeName(p.Name); ok && !parsed.IsLiveness() {
				out[pp.Namespace+"/"+parsed.Marker] = true
			}
		}
	}
	return out
}

// isVirtual reports whether the node is a virtual-kubelet node.
func isVirtual(node *corev1.Node) bool {
	return node.Labels[appsv1alpha1.VirtualKubeletLabel] == appsv1alpha1.VirtualKubeletValue
}
