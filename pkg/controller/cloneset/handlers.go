package cloneset

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/expectations"
	"github.com/nodekruise/kruise/pkg/ownership"
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
		c.queue.Add(key)
	}
}

// ownerKey is the queue key of the CloneSet controlling obj, if it is in the cache with that UID.
func (c *Controller) ownerKey(obj metav1.Object) (string, bool) {
	ref := ownership.Ref(obj, controllerKind)
	if ref == nil {
		return "", false
	}
	cs, err := c.cloneSets.CloneSets(obj.GetNamespace()).Get(ref.Name)
	if err != nil || cs.UID != ref.UID {
		return "", false
	}
	return obj.GetNamespace() + "/" + ref.Name, true
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

func (c *Controller) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key, ok := c.ownerKey(pod); ok {
		c.expect.Observe(key, expectations.Create, expectations.Pods, pod.Name)
		if pod.DeletionTimestamp != nil {
			c.expect.Observe(key, expectations.Delete, expectations.Pods, pod.Name) // seen first while terminating (a relist)
		}
		c.queue.Add(key)
		return
	}
	if metav1.GetControllerOfNoCopy(pod) == nil && pod.DeletionTimestamp == nil {
		c.enqueueMatching(pod)
	}
}

func (c *Controller) podUpdated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if c.skipPodNoise && !podChangeMatters(old, cur) {
		c.podVersions.Observe(cur)
		return
	}
	c.podVersions.Observe(cur)
	oldKey, oldOwned := c.ownerKey(old)
	curKey, curOwned := c.ownerKey(cur)
	if curOwned && cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		// A pod being deleted no longer counts (Active), so the deletion asked for is done
		// for the diff: its replacement need not wait out the grace period. Replacements that
		// take its PVCs wait for it to be gone all the same (ReplacementsWaiting).
		c.expect.Observe(curKey, expectations.Delete, expectations.Pods, cur.Name)
	}
	if oldOwned && (!curOwned || oldKey != curKey) {
		c.queue.Add(oldKey) // released: the old owner counts one pod less
	}
	if curOwned {
		c.queue.Add(curKey)
		return
	}
	if metav1.GetControllerOfNoCopy(cur) == nil && cur.DeletionTimestamp == nil &&
		!reflect.DeepEqual(old.Labels, cur.Labels) {
		c.enqueueMatching(cur)
	}
}

func (c *Controller) podDeleted(obj any) {
	m, ok := expectations.DeletedObject(obj)
	if !ok {
		return
	}
	c.podVersions.Forget(m)
	if key, ok := c.ownerKey(m); ok {
		c.expect.ObserveDeleted(key, expectations.Pods, obj)
		c.queue.Add(key)
	}
}

func (c *Controller) claimAdded(obj any) {
	if m, ok := obj.(metav1.Object); ok {
		if key, ok := c.ownerKey(m); ok {
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
	if key, ok := c.ownerKey(m); ok {
		c.expect.ObserveDeleted(key, expectations.PersistentVolumeClaims, obj)
		c.queue.Add(key)
	}
}
