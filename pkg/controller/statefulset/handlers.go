package statefulset

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/expectations"
	"github.com/nodekruise/kruise/pkg/ownership"
)

// controllerKind is what a StatefulSet's controller references say (ownership.Ref reads them in
// either version; the built-in StatefulSet's, group apps, are not ours).
var controllerKind = appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet")

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) setDeleted(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expect.Forget(key)
		c.queue.Add(key)
	}
}

// ownerKey is the queue key of the set controlling obj, if it is cached with that UID.
func (c *Controller) ownerKey(obj metav1.Object) (string, bool) {
	ref := ownership.Ref(obj, controllerKind)
	if ref == nil {
		return "", false
	}
	set, err := c.sets.StatefulSets(obj.GetNamespace()).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return "", false
	}
	return obj.GetNamespace() + "/" + ref.Name, true
}

// enqueueMatching queues the sets whose selector matches an orphan's labels: one may adopt it.
func (c *Controller) enqueueMatching(obj metav1.Object) {
	list, err := c.sets.StatefulSets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, set := range ownership.Selecting(obj, list, func(s *appsv1beta1.StatefulSet) *metav1.LabelSelector { return s.Spec.Selector }) {
		c.enqueue(set)
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
			c.expect.Observe(key, expectations.Delete, expectations.Pods, pod.Name)
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
	c.podVersions.Observe(cur)
	oldKey, oldOwned := c.ownerKey(old)
	curKey, curOwned := c.ownerKey(cur)
	if curOwned && cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		// The deletion asked for shows: the plans see the pod as terminating, keep its ordinal
		// until it is gone, and count it unavailable, so nothing more waits for it.
		c.expect.Observe(curKey, expectations.Delete, expectations.Pods, cur.Name)
	}
	if oldOwned && (!curOwned || oldKey != curKey) {
		c.queue.Add(oldKey)
	}
	if curOwned {
		c.queue.Add(curKey)
		return
	}
	if metav1.GetControllerOfNoCopy(cur) == nil && cur.DeletionTimestamp == nil && !reflect.DeepEqual(old.Labels, cur.Labels) {
		c.enqueueMatching(cur)
	}
}

// podDeleted observes a deletion not seen while terminating, and requeues the set: the pod's
// ordinal can be created anew now that its name is free.
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

// claimAdded and claimDeleted observe the PVCs a set creates; the PVCs carry no controller
// reference, so their set is found by name: <template>-<set>-<ordinal>.
func (c *Controller) claimAdded(obj any) {
	if m, ok := obj.(metav1.Object); ok {
		for _, key := range c.claimSets(m) {
			c.expect.Observe(key, expectations.Create, expectations.PersistentVolumeClaims, m.GetName())
			c.queue.Add(key)
		}
	}
}

func (c *Controller) claimDeleted(obj any) {
	if m, ok := expectations.DeletedObject(obj); ok {
		for _, key := range c.claimSets(m) {
			c.queue.Add(key)
		}
	}
}

// claimSets are the keys of the sets in claim's namespace whose templates name it.
func (c *Controller) claimSets(claim metav1.Object) []string {
	list, err := c.sets.StatefulSets(claim.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []string
	for _, set := range list {
		for _, vct := range set.Spec.VolumeClaimTemplates {
			rest, ok := strings.CutPrefix(claim.GetName(), vct.Name+"-")
			if !ok {
				continue
			}
			if _, ok := OrdinalOf(set.Name, rest); ok {
				out = append(out, set.Namespace+"/"+set.Name)
				break
			}
		}
	}
	return out
}
