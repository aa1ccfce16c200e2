package daemonset

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// controllerKind is what a DaemonSet's controller references say; pods made through v1alpha1
// keep that version in theirs (OpenKruise #2520), which ownership.Ref recognises.
var controllerKind = appsv1beta1.SchemeGroupVersion.WithKind("DaemonSet")

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueAll() {
	list, err := c.daemonSets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range list {
		c.enqueue(ds)
	}
}

func (c *Controller) daemonSetDeleted(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expect.Forget(key)
		c.queue.Add(key)
	}
}

// enqueueMatching queues the DaemonSets whose selector matches an orphan's labels.
func (c *Controller) enqueueMatching(obj metav1.Object) {
	list, err := c.daemonSets.DaemonSets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range ownership.Selecting(obj, list, func(ds *appsv1beta1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }) {
		c.enqueue(ds)
	}
}

func (c *Controller) nodeAdded(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	list, err := c.daemonSets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range list {
		if e := NodeEligibility(node, &ds.Spec.Template); e.ShouldRun {
			c.enqueue(ds)
		}
	}
}

// nodeUpdated queues the DaemonSets for which the node's change matters: its eligibility changed,
// or its labels (an update selector may match it now).
func (c *Controller) nodeUpdated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	cur, ok2 := curObj.(*corev1.Node)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	labelsChanged := !reflect.DeepEqual(old.Labels, cur.Labels)
	list, err := c.daemonSets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range list {
		if labelsChanged || NodeEligibility(old, &ds.Spec.Template) != NodeEligibility(cur, &ds.Spec.Template) {
			c.enqueue(ds)
		}
	}
}
