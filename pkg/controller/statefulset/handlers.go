package statefulset

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
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

// claimUpdated follows a claim's expansion (its capacity, its conditions) for
// status.volumeClaims and the pod update that waits for it; only with ResizeClaims, since
// without it nothing reads them.
func (c *Controller) claimUpdated(old, cur any) {
	if !c.resizeClaims {
		return
	}
	o, ok1 := old.(*corev1.PersistentVolumeClaim)
	n, ok2 := cur.(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 || (apiequality.Semantic.DeepEqual(o.Status, n.Status) && apiequality.Semantic.DeepEqual(o.Spec.Resources, n.Spec.Resources)) {
		return
	}
	for _, key := range c.claimSets(n) {
		c.queue.Add(key)
	}
}

func (c *Controller) claimDeleted(obj any) {
	if m, ok := expectations.DeletedObject(obj); ok {
		c.expander.Forget([]types.UID{m.GetUID()})
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
