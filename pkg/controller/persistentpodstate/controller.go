// Package persistentpodstate is the PersistentPodState controller: for the pods of a StatefulSet
// (apps/v1, or apps.kruise.io Advanced StatefulSet) it records in the PersistentPodState's status
// where each Ready pod runs (its node, that node's values of the topology keys, and chosen pod
// annotations), so that the pod webhook (pkg/webhook/ppsinjection) can steer a recreated pod back
// there; and it creates, updates and deletes the PersistentPodState a StatefulSet asks for by
// annotation. Decisions are pure (Desired, DecideGenerated); the status is written only when it
// changes, so a steady cluster costs no writes. docs/persistentpodstate.md.
package persistentpodstate

import (
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformersv1alpha1 "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1alpha1"
	kruiseinformersv1beta1 "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
	kruiselistersv1alpha1 "github.com/nodekruise/kruise/pkg/client/listers/apps/v1alpha1"
	kruiselistersv1beta1 "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Name is the controller's name in logs, metrics and the queue.
const Name = "persistentpodstate"

const (
	// targetIndex indexes PersistentPodStates and pods by workload: namespace/group/name.
	targetIndex = "persistentpodstate-target"
	// labelIndex indexes nodes by each of their labels, "key=value": does a value still exist.
	labelIndex = "persistentpodstate-label"

	// queue keys: a PersistentPodState's status, or a workload's generated PersistentPodState.
	statusPrefix   = "status/"
	generatePrefix = "generate/"
)

// Config is what the controller is built from.
type Config struct {
	ctrlbase.Config
	States               kruiseinformersv1alpha1.PersistentPodStateInformer
	StatefulSets         appsinformers.StatefulSetInformer
	AdvancedStatefulSets kruiseinformersv1beta1.StatefulSetInformer
	Pods                 coreinformers.PodInformer
	Nodes                coreinformers.NodeInformer
	// IgnoreOrdinalsStart: Advanced StatefulSets number pods from 0 whatever ordinals.start says
	// (gate StatefulSetStartOrdinal off).
	IgnoreOrdinalsStart bool
}

// Controller records where StatefulSet pods ran.
type Controller struct {
	client       kubernetes.Interface
	kruiseClient versioned.Interface
	states       kruiselistersv1alpha1.PersistentPodStateLister
	stateIndexer cache.Indexer
	sts          appslisters.StatefulSetLister
	asts         kruiselistersv1beta1.StatefulSetLister
	podIndexer   cache.Indexer
	nodes        corelisters.NodeLister
	nodeIndexer  cache.Indexer
	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]

	ignoreOrdinalsStart bool
}

// New builds the controller and registers its event handlers. It does not call the API server.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.KruiseClient == nil || cfg.States == nil || cfg.StatefulSets == nil ||
		cfg.AdvancedStatefulSets == nil || cfg.Pods == nil || cfg.Nodes == nil {
		return nil, errors.New("persistentpodstate: Client, KruiseClient and every informer are required")
	}
	c := &Controller{
		client:              cfg.Client,
		kruiseClient:        cfg.KruiseClient,
		states:              cfg.States.Lister(),
		stateIndexer:        cfg.States.Informer().GetIndexer(),
		sts:                 cfg.StatefulSets.Lister(),
		asts:                cfg.AdvancedStatefulSets.Lister(),
		podIndexer:          cfg.Pods.Informer().GetIndexer(),
		nodes:               cfg.Nodes.Lister(),
		nodeIndexer:         cfg.Nodes.Informer().GetIndexer(),
		recorder:            cfg.Recorder,
		queue:               workers.NewQueue(Name, cfg.ClockOrReal()),
		ignoreOrdinalsStart: cfg.IgnoreOrdinalsStart,
	}
	for _, x := range []struct {
		inf     cache.SharedIndexInformer
		index   cache.IndexFunc
		name    string
		handler cache.ResourceEventHandler
	}{
		{cfg.States.Informer(), indexState, targetIndex, ctrlbase.Handlers(c.enqueueState, c.enqueueState)},
		{cfg.Pods.Informer(), indexPod, targetIndex, cache.ResourceEventHandlerFuncs{
			AddFunc: c.podChanged, DeleteFunc: c.podChanged,
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*corev1.Pod)
				n, ok2 := cur.(*corev1.Pod)
				if ok1 && ok2 && podReady(o) == podReady(n) && o.Spec.NodeName == n.Spec.NodeName &&
					(o.DeletionTimestamp == nil) == (n.DeletionTimestamp == nil) {
					return
				}
				c.podChanged(cur)
			},
		}},
		{cfg.Nodes.Informer(), indexNodeLabels, labelIndex, cache.ResourceEventHandlerFuncs{
			// A new node satisfies nothing recorded; a deleted or relabelled one may leave a
			// recorded value unsatisfiable.
			DeleteFunc: func(any) { c.enqueueAllStates() },
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*corev1.Node)
				n, ok2 := cur.(*corev1.Node)
				if ok1 && ok2 && apiequality.Semantic.DeepEqual(o.Labels, n.Labels) {
					return
				}
				c.enqueueAllStates()
			},
		}},
		{cfg.StatefulSets.Informer(), nil, "", ctrlbase.Handlers(c.workloadChanged, c.workloadChanged)},
		{cfg.AdvancedStatefulSets.Informer(), nil, "", ctrlbase.Handlers(c.workloadChanged, c.workloadChanged)},
	} {
		if x.index != nil {
			if err := x.inf.AddIndexers(cache.Indexers{x.name: x.index}); err != nil {
				return nil, fmt.Errorf("adding index %s: %w", x.name, err)
			}
		}
		if _, err := x.inf.AddEventHandler(x.handler); err != nil {
			return nil, fmt.Errorf("adding event handler: %w", err)
		}
	}
	return c, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// supportedGroup is the API group of a supported target (apps or apps.kruise.io, kind
// StatefulSet); false for any other.
func supportedGroup(apiVersion, kind string) (string, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind != "StatefulSet" {
		return "", false
	}
	switch gv.Group {
	case appsv1.GroupName, appsv1alpha1.GroupName:
		return gv.Group, true
	}
	return "", false
}

// TargetKey is the index key of a workload: namespace/group/name.
func TargetKey(namespace, group, name string) string {
	return namespace + "/" + group + "/" + name
}

func indexState(obj any) ([]string, error) {
	pps, ok := obj.(*appsv1alpha1.PersistentPodState)
	if !ok {
		return nil, nil
	}
	ref := pps.Spec.TargetReference
	g, ok := supportedGroup(ref.APIVersion, ref.Kind)
	if !ok {
		return nil, nil
	}
	return []string{TargetKey(pps.Namespace, g, ref.Name)}, nil
}

func indexPod(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil, nil
	}
	g, ok := supportedGroup(ref.APIVersion, ref.Kind)
	if !ok {
		return nil, nil
	}
	return []string{TargetKey(pod.Namespace, g, ref.Name)}, nil
}

func indexNodeLabels(obj any) ([]string, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(node.Labels))
	for k, v := range node.Labels {
		out = append(out, k+"="+v)
	}
	return out, nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func unwrap(obj any) any {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

func (c *Controller) enqueueState(obj any) {
	if pps, ok := unwrap(obj).(*appsv1alpha1.PersistentPodState); ok {
		c.queue.Add(statusPrefix + pps.Namespace + "/" + pps.Name)
	}
}

// enqueueTarget queues the PersistentPodStates of the workload key.
func (c *Controller) enqueueTarget(key string) {
	objs, err := c.stateIndexer.ByIndex(targetIndex, key)
	if err != nil {
		return
	}
	for _, o := range objs {
		c.enqueueState(o)
	}
}

func (c *Controller) podChanged(obj any) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	keys, _ := indexPod(pod)
	for _, k := range keys {
		c.enqueueTarget(k)
	}
}

func (c *Controller) enqueueAllStates() {
	for _, o := range c.stateIndexer.List() {
		c.enqueueState(o)
	}
}

// workloadChanged queues the workload's PersistentPodStates and its generated one.
func (c *Controller) workloadChanged(obj any) {
	var group string
	var meta *metav1.ObjectMeta
	switch w := unwrap(obj).(type) {
	case *appsv1.StatefulSet:
		group, meta = appsv1.GroupName, &w.ObjectMeta
	case *appsv1beta1.StatefulSet:
		group, meta = appsv1alpha1.GroupName, &w.ObjectMeta
	default:
		return
	}
	key := TargetKey(meta.Namespace, group, meta.Name)
	c.enqueueTarget(key)
	c.queue.Add(generatePrefix + key)
}

// splitTargetKey reads namespace, group and name back from a TargetKey.
func splitTargetKey(key string) (namespace, group, name string, ok bool) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}
