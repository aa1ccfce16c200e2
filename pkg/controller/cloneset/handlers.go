package cloneset

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
)

// controllerKind is what a CloneSet's controller references say.
var controllerKind = appsv1beta1.SchemeGroupVersion.WithKind("CloneSet")

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

func (c *Controller) cloneSetDeleted(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expect.Forget(key)
		c.stranded.forget(key)
		c.queue.Add(key)
	}
}

// enqueueMatching queues the CloneSets whose selector matches an orphan's labels: one of them
// may adopt it.
func (c *Controller) enqueueMatching(obj metav1.Object) {
	list, err := c.cloneSets.CloneSets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, cs := range ownership.Selecting(obj, list, func(cs *appsv1beta1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector }) {
		c.enqueue(cs)
	}
}

func (c *Controller) claimAdded(obj any) {
	if m, ok := obj.(metav1.Object); ok {
		if key, ok := c.podEvents.OwnerKey(m); ok {
			c.expect.Observe(key, expectations.Create, expectations.PersistentVolumeClaims, m.GetName())
			c.queue.Add(key)
		}
	}
}

func (c *Controller) claimDeleted(obj any) {
	m, ok := expectations.DeletedObject(obj)
	if !ok {
		return
	}
	c.forgetClaim(m.GetUID())
	if key, ok := c.podEvents.OwnerKey(m); ok {
		c.expect.ObserveDeleted(key, expectations.PersistentVolumeClaims, obj)
		c.queue.Add(key)
	}
}
