package workloadspread

import (
	"fmt"
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

// targetIndex indexes WorkloadSpreads by namespace, kind and name of their target (the group is
// checked by spread.RefersTo), so a pod or workload event finds its WorkloadSpreads without a
// scan of the namespace.
const targetIndex = "workloadspread-controller-target"

func indexByTarget(obj any) ([]string, error) {
	ws, ok := obj.(*appsv1alpha1.WorkloadSpread)
	if !ok || ws.Spec.TargetReference == nil {
		return nil, nil
	}
	return []string{targetKey(ws.Namespace, ws.Spec.TargetReference.Kind, ws.Spec.TargetReference.Name)}, nil
}

func targetKey(namespace, kind, name string) string { return namespace + "/" + kind + "/" + name }

// addHandlers watches the WorkloadSpreads, the pods of the workloads they target and the
// replicas of those workloads. Every handler filters: an update that changes nothing the
// controller counts or decides on queues nothing.
func (c *Controller) addHandlers(cfg Config) error {
	if _, err := cfg.WorkloadSpreads.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.spreadUpdated,
	}); err != nil {
		return fmt.Errorf("watching WorkloadSpreads: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: c.podChanged,
		DeleteFunc: func(obj any) {
			if p := podOf(obj); p != nil {
				c.unfit.forget(p.UID)
			}
			c.podChanged(nil, obj)
		},
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	type watch struct {
		what     string
		informer cache.SharedIndexInformer
	}
	var watches []watch
	if i := cfg.ReplicaSets; i != nil {
		c.replicaSets = i.Lister()
		watches = append(watches, watch{"ReplicaSets", i.Informer()})
	}
	if i := cfg.Deployments; i != nil {
		c.deployments = i.Lister()
		watches = append(watches, watch{"Deployments", i.Informer()})
	}
	if i := cfg.StatefulSets; i != nil {
		c.statefulSets = i.Lister()
		watches = append(watches, watch{"StatefulSets", i.Informer()})
	}
	if i := cfg.Jobs; i != nil {
		c.jobs = i.Lister()
		watches = append(watches, watch{"Jobs", i.Informer()})
	}
	if i := cfg.CloneSets; i != nil {
		c.cloneSets = i.Lister()
		watches = append(watches, watch{"CloneSets", i.Informer()})
	}
	if i := cfg.AdvancedStatefulSets; i != nil {
		c.advancedSets = i.Lister()
		watches = append(watches, watch{"Advanced StatefulSets", i.Informer()})
	}
	for _, w := range watches {
		if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.workloadChanged(nil, obj) },
			UpdateFunc: c.workloadChanged,
			DeleteFunc: func(obj any) { c.workloadChanged(nil, obj) },
		}); err != nil {
			return fmt.Errorf("watching %s: %w", w.what, err)
		}
	}
	return nil
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// spreadUpdated queues a WorkloadSpread whose spec or annotations changed, or whose status gained
// a ledger entry (the webhook's: it must be pruned at its expiry). The controller's own status
// writes only remove entries, so they do not wake it.
func (c *Controller) spreadUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*appsv1alpha1.WorkloadSpread)
	cur, ok2 := newObj.(*appsv1alpha1.WorkloadSpread)
	if !ok1 || !ok2 {
		return
	}
	if old.Generation != cur.Generation || !maps.Equal(old.Annotations, cur.Annotations) || old.UID != cur.UID ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) || newMarks(old.Status, cur.Status) {
		c.enqueue(cur)
	}
}

// newMarks says whether cur's ledger holds an entry old's does not.
func newMarks(old, cur appsv1alpha1.WorkloadSpreadStatus) bool {
	has := func(ss []appsv1alpha1.WorkloadSpreadSubsetStatus, subset, key string, deleting bool) bool {
		for _, s := range ss {
			if s.Name != subset {
				continue
			}
			if deleting {
				_, ok := s.DeletingPods[key]
				return ok
			}
			_, ok := s.CreatingPods[key]
			return ok
		}
		return false
	}
	added := func(olds, curs []appsv1alpha1.WorkloadSpreadSubsetStatus) bool {
		for _, s := range curs {
			for k := range s.CreatingPods {
				if !has(olds, s.Name, k, false) {
					return true
				}
			}
			for k := range s.DeletingPods {
				if !has(olds, s.Name, k, true) {
					return true
				}
			}
		}
		return false
	}
	if added(old.SubsetStatuses, cur.SubsetStatuses) {
		return true
	}
	for v, ss := range cur.VersionedSubsetStatuses {
		if added(old.VersionedSubsetStatuses[v], ss) {
			return true
		}
	}
	return false
}

// podChanged queues the WorkloadSpreads that target the pod's workload (found by its controller
// owner, never by its annotation alone) when the pod appears, goes, or changes in something they
// count or decide on.
func (c *Controller) podChanged(oldObj, newObj any) {
	cur := podOf(newObj)
	if cur == nil {
		return
	}
	old := podOf(oldObj)
	if old != nil && !countedChanged(old, cur) {
		return
	}
	c.enqueueOwnerSpreads(cur)
	if old != nil && !reflect.DeepEqual(old.OwnerReferences, cur.OwnerReferences) {
		c.enqueueOwnerSpreads(old)
	}
}

func podOf(obj any) *corev1.Pod {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// countedChanged reports whether a WorkloadSpread can count or treat the pod differently after
// the change: its identity, phase, readiness, node, deletion, scheduling failure, subset
// annotation, deletion cost, labels (version, selector) or owners.
func countedChanged(old, cur *corev1.Pod) bool {
	return old.UID != cur.UID || old.Status.Phase != cur.Status.Phase || old.Spec.NodeName != cur.Spec.NodeName ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		condition(old, corev1.PodReady) != condition(cur, corev1.PodReady) ||
		condition(old, corev1.PodScheduled) != condition(cur, corev1.PodScheduled) ||
		old.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation] != cur.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation] ||
		old.Annotations[appsv1alpha1.PodDeletionCostAnnotation] != cur.Annotations[appsv1alpha1.PodDeletionCostAnnotation] ||
		!maps.Equal(old.Labels, cur.Labels) || !reflect.DeepEqual(old.OwnerReferences, cur.OwnerReferences)
}

// condition is a pod condition's status and reason.
func condition(pod *corev1.Pod, t corev1.PodConditionType) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

// rsOwner is the controller owner of a cached ReplicaSet (a Deployment's pods resolve to it).
func (c *Controller) rsOwner(namespace, name string) *metav1.OwnerReference {
	if c.replicaSets == nil {
		return nil
	}
	rs, err := c.replicaSets.ReplicaSets(namespace).Get(name)
	if err != nil {
		return nil
	}
	return metav1.GetControllerOfNoCopy(rs)
}

func (c *Controller) enqueueOwnerSpreads(pod *corev1.Pod) {
	ref := spread.OwnerRef(pod, c.rsOwner)
	if ref == nil {
		return
	}
	c.enqueueTargeting(pod.Namespace, *ref)
}

// enqueueTargeting queues the WorkloadSpreads of namespace that target ref.
func (c *Controller) enqueueTargeting(namespace string, ref appsv1alpha1.TargetReference) {
	objs, err := c.byTarget.ByIndex(targetIndex, targetKey(namespace, ref.Kind, ref.Name))
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("looking up WorkloadSpreads: %w", err))
		return
	}
	for _, o := range objs {
		if ws, ok := o.(*appsv1alpha1.WorkloadSpread); ok && spread.RefersTo(ws, ref) {
			c.enqueue(ws)
		}
	}
}

// workloadChanged queues, when a workload appears, goes or changes what the spread reads of it
// (replicas, parallelism, the update revision, the template's hash, its deletion), the
// WorkloadSpreads that target it; for a ReplicaSet also those of its Deployment (a new ReplicaSet
// is a new latest version).
func (c *Controller) workloadChanged(oldObj, newObj any) {
	if tomb, ok := newObj.(cache.DeletedFinalStateUnknown); ok {
		newObj = tomb.Obj
	}
	if oldObj != nil && reflect.DeepEqual(readOf(oldObj), readOf(newObj)) {
		return
	}
	m, err := meta.Accessor(newObj)
	if err != nil {
		return
	}
	ref, ok := refOf(newObj, m.GetName())
	if !ok {
		return
	}
	c.enqueueTargeting(m.GetNamespace(), ref)
	if _, isRS := newObj.(*appsv1.ReplicaSet); isRS {
		if o := metav1.GetControllerOfNoCopy(m); o != nil && o.Kind == "Deployment" {
			c.enqueueTargeting(m.GetNamespace(), appsv1alpha1.TargetReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name})
		}
	}
}

// read is what the controller reads of a workload.
type read struct {
	replicas *int32
	revision string
	deleting bool
	labels   string
}

func readOf(obj any) read {
	var r read
	if m, err := meta.Accessor(obj); err == nil {
		r.deleting = m.GetDeletionTimestamp() != nil
		r.revision = m.GetAnnotations()[deploymentRevision]
		r.labels = m.GetLabels()[appsv1.DefaultDeploymentUniqueLabelKey]
	}
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		r.replicas = o.Spec.Replicas
	case *appsv1.Deployment:
		r.replicas = o.Spec.Replicas
	case *appsv1.StatefulSet:
		r.replicas = o.Spec.Replicas
	case *batchv1.Job:
		r.replicas = o.Spec.Parallelism
	case *appsv1beta1.CloneSet:
		r.replicas, r.revision = o.Spec.Replicas, o.Status.UpdateRevision
	case *appsv1beta1.StatefulSet:
		r.replicas = o.Spec.Replicas
	}
	return r
}

// refOf is the target reference naming a typed workload (informers' objects carry no TypeMeta;
// the version is ignored by RefersTo).
func refOf(obj any, name string) (appsv1alpha1.TargetReference, bool) {
	switch obj.(type) {
	case *appsv1.ReplicaSet:
		return appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name}, true
	case *appsv1.Deployment:
		return appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name}, true
	case *appsv1.StatefulSet:
		return appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name}, true
	case *batchv1.Job:
		return appsv1alpha1.TargetReference{APIVersion: "batch/v1", Kind: "Job", Name: name}, true
	case *appsv1beta1.CloneSet:
		return appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: name}, true
	case *appsv1beta1.StatefulSet:
		return appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: name}, true
	}
	return appsv1alpha1.TargetReference{}, false
}
