package crr

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

const (
	// podIndex maps "namespace/podName" to the unfinished CRRs of that pod.
	podIndex = "recreate.kruise.io/pod"
	// nodeIndex maps a node name to the admitted, unfinished CRRs on it.
	nodeIndex = "recreate.kruise.io/node"
)

// indexByPod indexes unfinished CRRs by their target pod. Finished ones are
// left out: nothing about a pod changes them any more.
func indexByPod(obj any) ([]string, error) {
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok || crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
		return nil, nil
	}
	return []string{crr.Namespace + "/" + crr.Spec.PodName}, nil
}

// indexByNode indexes admitted, unfinished CRRs by the node-name label.
func indexByNode(obj any) ([]string, error) {
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok || crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
		return nil, nil
	}
	node, ok := crr.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey]
	if !ok || crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] == "" {
		return nil, nil
	}
	return []string{node}, nil
}

func (c *Controller) enqueueCRR(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

// crrChanged enqueues a CRR that was added, changed or deleted, and the
// other CRRs of its pod that wait to be routed or admitted: one may wait for
// this one (admit routes a pod's requests in creation order, and admits one
// the webhook routed at create only once the older ones are routed).
func (c *Controller) crrChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok {
		return
	}
	c.enqueueCRR(crr)
	objs, err := c.crrIndexer.ByIndex(podIndex, crr.Namespace+"/"+crr.Spec.PodName)
	if err != nil {
		return
	}
	for _, obj := range objs {
		if o, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok && o.UID != crr.UID && (!appsv1alpha1.IsRouted(o) || !appsv1alpha1.IsAdmitted(o)) {
			c.enqueueCRR(o)
		}
	}
}

func (c *Controller) enqueueIndexed(index, value string) {
	objs, err := c.crrIndexer.ByIndex(index, value)
	if err != nil {
		return
	}
	for _, obj := range objs {
		c.enqueueCRR(obj)
	}
}

// podChanged enqueues the unfinished CRRs of a pod that appeared or went
// away (a tombstone included).
func (c *Controller) podChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.enqueueIndexed(podIndex, pod.Namespace+"/"+pod.Name)
}

// podUpdated enqueues the pod's CRRs only when something they depend on
// changed: most pod updates (status churn) concern no CRR. A container's
// new ID is what a request waiting for its pod to start waits for.
func (c *Controller) podUpdated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != cur.UID || old.Spec.NodeName != cur.Spec.NodeName ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) || old.Status.Phase != cur.Status.Phase ||
		!sameContainerIDs(old, cur) {
		c.enqueueIndexed(podIndex, cur.Namespace+"/"+cur.Name)
	}
}

func sameContainerIDs(a, b *corev1.Pod) bool {
	if len(a.Status.ContainerStatuses) != len(b.Status.ContainerStatuses) {
		return false
	}
	for i := range a.Status.ContainerStatuses {
		if a.Status.ContainerStatuses[i].ContainerID != b.Status.ContainerStatuses[i].ContainerID {
			return false
		}
	}
	return true
}

// leaseChanged records a daemon heartbeat Lease's renewal and enqueues the
// CRRs on its node.
func (c *Controller) leaseChanged(obj any) {
	if lease, ok := obj.(*coordinationv1.Lease); ok && lease.Namespace == c.namespace {
		if node := c.liveness.observe(lease); node != "" {
			c.enqueueIndexed(nodeIndex, node)
		}
	}
}

// leaseDeleted forgets a daemon heartbeat Lease and enqueues the CRRs on
// its node.
func (c *Controller) leaseDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if lease, ok := obj.(*coordinationv1.Lease); ok && lease.Namespace == c.namespace {
		if node := c.liveness.forget(lease); node != "" {
			c.enqueueIndexed(nodeIndex, node)
		}
	}
}

// countCompletion counts a request the informer shows turning Completed:
// under the reason this controller completed it for, or else as the
// daemon's Succeeded or Failed. Requests already completed when first
// seen (a new leader's initial list) are not counted again.
func (c *Controller) countCompletion(oldObj, curObj any) {
	old, ok1 := oldObj.(*appsv1alpha1.ContainerRecreateRequest)
	cur, ok2 := curObj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok1 || !ok2 || old.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted ||
		cur.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted {
		return
	}
	reason := daemonCompletion(cur)
	if own, ok := c.ownCompletions.LoadAndDelete(cur.UID); ok {
		reason = own.(string)
	}
	c.metrics.completed.WithLabelValues(reason).Inc()
}

// forgetCompletion drops the note of a deleted request's completion, should
// its completed state never have been delivered.
func (c *Controller) forgetCompletion(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok {
		c.ownCompletions.Delete(crr.UID)
	}
}
