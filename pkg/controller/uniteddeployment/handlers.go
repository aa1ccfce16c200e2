package uniteddeployment

import (
	"fmt"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ownerIndex indexes the four subset kinds by the UnitedDeployment controlling them
// ("namespace/name"), so a reconcile finds its workloads without listing the namespace.
const ownerIndex = "uniteddeployment-owner"

var udKind = appsv1alpha1.SchemeGroupVersion.WithKind("UnitedDeployment")

func indexByOwner(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := udOwner(m); ref != nil {
		return []string{m.GetNamespace() + "/" + ref.Name}, nil
	}
	return nil, nil
}

// udOwner is m's controller reference when it is a UnitedDeployment.
func udOwner(m metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != udKind.Kind || ref.APIVersion != udKind.GroupVersion().String() {
		return nil
	}
	return ref
}

// addHandlers watches UnitedDeployments, their subset workloads and those workloads' pods.
// Every handler filters: an update that changes nothing the controller reads queues nothing,
// so a steady UnitedDeployment is never reconciled (its own status writes included).
func (c *Controller) addHandlers(cfg Config) error {
	if _, err := cfg.UnitedDeployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*appsv1alpha1.UnitedDeployment)
			cur, ok2 := newObj.(*appsv1alpha1.UnitedDeployment)
			if ok1 && ok2 && udChanged(old, cur) {
				c.enqueue(cur)
			}
		},
	}); err != nil {
		return fmt.Errorf("watching UnitedDeployments: %w", err)
	}
	for what, inf := range map[string]cache.SharedIndexInformer{
		"CloneSets": cfg.CloneSets.Informer(), "Advanced StatefulSets": cfg.AdvancedStatefulSets.Informer(),
		"StatefulSets": cfg.StatefulSets.Informer(), "Deployments": cfg.Deployments.Informer(),
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: c.workloadChanged,
			UpdateFunc: func(oldObj, newObj any) {
				if workloadRead(oldObj) != workloadRead(newObj) {
					c.workloadChanged(newObj)
				}
			},
			DeleteFunc: c.workloadChanged,
		}); err != nil {
			return fmt.Errorf("watching %s: %w", what, err)
		}
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.podChanged,
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			cur, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 && podRead(old, cur) {
				c.podChanged(cur)
			}
		},
		DeleteFunc: c.podChanged,
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	return nil
}

// udChanged: the spec (generation), deletion, identity or labels and annotations changed. Status
// writes, ours included, change none of these.
func udChanged(old, cur *appsv1alpha1.UnitedDeployment) bool {
	return old.Generation != cur.Generation || old.UID != cur.UID ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		!maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations)
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func unwrap(obj any) any {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

// workloadChanged queues the UnitedDeployment controlling a subset workload.
func (c *Controller) workloadChanged(obj any) {
	m, ok := unwrap(obj).(metav1.Object)
	if !ok {
		return
	}
	if ref := udOwner(m); ref != nil {
		c.queue.Add(m.GetNamespace() + "/" + ref.Name)
	}
}

// read is what the controller reads of a subset workload.
type read struct {
	generation                                 int64
	replicas, partition, statusReplicas, ready int32
	subset, revision, patch, failure, owner    string
	deleting                                   bool
}

func workloadRead(obj any) read {
	w, ok := unwrap(obj).(workload)
	if !ok {
		return read{}
	}
	e, ok := describe(w)
	if !ok {
		return read{}
	}
	r := read{generation: w.GetGeneration(), replicas: e.replicas, partition: e.partition, statusReplicas: e.statusReplicas,
		ready: e.ready, subset: e.subset, revision: e.revision, patch: e.patch, failure: e.failure(),
		deleting: w.GetDeletionTimestamp() != nil}
	if ref := udOwner(w); ref != nil {
		r.owner = string(ref.UID)
	}
	return r
}

// podRead: the pod changed in what status or Adaptive scheduling reads: phase, node,
// readiness, the scheduling failure, labels (revision, reservation), deletion.
func podRead(old, cur *corev1.Pod) bool {
	return old.Status.Phase != cur.Status.Phase || old.Spec.NodeName != cur.Spec.NodeName ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		!reflect.DeepEqual(podCondition(old, corev1.PodReady), podCondition(cur, corev1.PodReady)) ||
		!reflect.DeepEqual(podCondition(old, corev1.PodScheduled), podCondition(cur, corev1.PodScheduled)) ||
		!maps.Equal(old.Labels, cur.Labels)
}

// podChanged queues the UnitedDeployment of a subset pod: the pod's owner (a CloneSet or
// StatefulSet, or a ReplicaSet whose Deployment) is a workload a UnitedDeployment controls.
func (c *Controller) podChanged(obj any) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok || pod.Labels[appsv1alpha1.SubSetNameLabelKey] == "" {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	var owner metav1.Object
	switch ref.Kind {
	case "CloneSet":
		if o, err := c.cloneSets.CloneSets(pod.Namespace).Get(ref.Name); err == nil {
			owner = o
		}
	case "StatefulSet":
		if ref.APIVersion == appsv1beta1.SchemeGroupVersion.String() {
			if o, err := c.advanced.StatefulSets(pod.Namespace).Get(ref.Name); err == nil {
				owner = o
			}
		} else if o, err := c.statefulSets.StatefulSets(pod.Namespace).Get(ref.Name); err == nil {
			owner = o
		}
	case "ReplicaSet":
		rs, err := c.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
		if err != nil {
			return
		}
		if d := metav1.GetControllerOfNoCopy(rs); d != nil && d.Kind == "Deployment" {
			if o, err := c.deployments.Deployments(pod.Namespace).Get(d.Name); err == nil {
				owner = o
			}
		}
	}
	if owner != nil {
		c.workloadChanged(owner)
	}
}
