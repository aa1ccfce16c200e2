package podunavailablebudget

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

// addHandlers watches the budgets, the pods (a change of what a budget reads of them, on the
// budgets that cover them: no annotation needed, OpenKruise #1857) and the replicas of the
// workloads.
func (c *Controller) addHandlers(cfg Config) error {
	if _, err := cfg.Budgets.Informer().AddEventHandler(ctrlbase.Handlers(c.enqueueBudget, c.enqueueBudget)); err != nil {
		return fmt.Errorf("watching PodUnavailableBudgets: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: c.podChanged,
		DeleteFunc: func(obj any) { c.podChanged(nil, obj) },
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	type watch struct {
		what     string
		informer cache.SharedIndexInformer
	}
	var watches []watch
	if i := cfg.ReplicaSets; i != nil {
		c.workloads.ReplicaSets = i.Lister()
		watches = append(watches, watch{"ReplicaSets", i.Informer()})
	}
	if i := cfg.Deployments; i != nil {
		c.workloads.Deployments = i.Lister()
		watches = append(watches, watch{"Deployments", i.Informer()})
	}
	if i := cfg.StatefulSets; i != nil {
		c.workloads.StatefulSets = i.Lister()
		watches = append(watches, watch{"StatefulSets", i.Informer()})
	}
	if i := cfg.CloneSets; i != nil {
		c.workloads.CloneSets = i.Lister()
		watches = append(watches, watch{"CloneSets", i.Informer()})
	}
	if i := cfg.AdvancedStatefulSets; i != nil {
		c.workloads.AdvancedStatefulSets = i.Lister()
		watches = append(watches, watch{"Advanced StatefulSets", i.Informer()})
	}
	for _, w := range watches {
		if err := c.watchWorkload(w.informer, w.what); err != nil {
			return err
		}
	}
	return nil
}

// replicasOf is the spec.replicas of a watched workload.
func replicasOf(obj any) *int32 {
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		return o.Spec.Replicas
	case *appsv1.Deployment:
		return o.Spec.Replicas
	case *appsv1.StatefulSet:
		return o.Spec.Replicas
	case *appsv1beta1.CloneSet:
		return o.Spec.Replicas
	case *appsv1beta1.StatefulSet:
		return o.Spec.Replicas
	}
	return nil
}

func (c *Controller) enqueueBudget(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// podChanged queues the budgets that cover the pod before or after the change, when something a
// budget reads of it changed.
func (c *Controller) podChanged(oldObj, newObj any) {
	cur := podOf(newObj)
	if cur == nil {
		return
	}
	old := podOf(oldObj)
	if old != nil && !readChanged(old, cur) {
		return
	}
	c.enqueueCovering(cur)
	if old != nil && (!maps.Equal(old.Labels, cur.Labels) || !reflect.DeepEqual(old.OwnerReferences, cur.OwnerReferences)) {
		c.enqueueCovering(old)
	}
}

func podOf(obj any) *corev1.Pod {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// readChanged reports whether a budget can count pod differently after the change: its labels
// or owners (which budget covers it, under which workload), its availability (readiness, phase,
// deletion, in-place update state, with or without unready pods protected), its identity.
func readChanged(old, cur *corev1.Pod) bool {
	return old.UID != cur.UID || old.Status.Phase != cur.Status.Phase ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		!maps.Equal(old.Labels, cur.Labels) || !reflect.DeepEqual(old.OwnerReferences, cur.OwnerReferences) ||
		podbudget.Available(old, false) != podbudget.Available(cur, false) ||
		podbudget.Available(old, true) != podbudget.Available(cur, true)
}

// enqueueCovering queues the budgets of the pod's namespace that cover it.
func (c *Controller) enqueueCovering(pod *corev1.Pod) {
	budgets, err := c.budgets.PodUnavailableBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing PodUnavailableBudgets: %w", err))
		return
	}
	for _, b := range budgets {
		ok, err := podbudget.Covers(context.Background(), c.workloads, b, pod)
		if err != nil {
			utilruntime.HandleError(err)
			continue
		}
		if ok {
			c.enqueueBudget(b)
		}
	}
}

// watchWorkload queues, when a workload appears, goes, or changes its replicas or owners, the
// budgets that may count it: those targeting it and every selector budget of its namespace.
func (c *Controller) watchWorkload(inf cache.SharedIndexInformer, what string) error {
	changed := func(oldObj, newObj any) {
		if oldObj == nil || workloadChanged(oldObj, newObj) {
			c.enqueueForWorkload(newObj)
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) { changed(nil, obj) },
	})
	if err != nil {
		return fmt.Errorf("watching %s: %w", what, err)
	}
	return nil
}

// workloadChanged reports whether a budget can count the workload differently after an update:
// its replicas, its deletion or its owners changed (a status update changes none of them).
func workloadChanged(oldObj, newObj any) bool {
	o, n := replicasOf(oldObj), replicasOf(newObj)
	om, err1 := meta.Accessor(oldObj)
	nm, err2 := meta.Accessor(newObj)
	return err1 != nil || err2 != nil || !ptrEqual(o, n) || (om.GetDeletionTimestamp() == nil) != (nm.GetDeletionTimestamp() == nil) ||
		!reflect.DeepEqual(om.GetOwnerReferences(), nm.GetOwnerReferences())
}

func ptrEqual(a, b *int32) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func (c *Controller) enqueueForWorkload(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	gk := gkOf(obj)
	budgets, err := c.budgets.PodUnavailableBudgets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing PodUnavailableBudgets: %w", err))
		return
	}
	for _, b := range budgets {
		if b.Spec.Selector != nil || targets(b.Spec.TargetReference, gk, m.GetName()) {
			c.enqueueBudget(b)
		}
	}
}

// gkOf is the group and kind of a typed workload (informers' objects carry no TypeMeta).
func gkOf(obj any) schema.GroupKind {
	switch obj.(type) {
	case *appsv1.ReplicaSet:
		return schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	case *appsv1.Deployment:
		return schema.GroupKind{Group: "apps", Kind: "Deployment"}
	case *appsv1.StatefulSet:
		return schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	case *appsv1beta1.CloneSet:
		return schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	case *appsv1beta1.StatefulSet:
		return schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}
	}
	return schema.GroupKind{}
}

func targets(t *policyv1alpha1.TargetReference, gk schema.GroupKind, name string) bool {
	if t == nil || t.Kind != gk.Kind || t.Name != name {
		return false
	}
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	return err == nil && gv.Group == gk.Group
}
