package recreate

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/heartbeat"
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
// changed: most pod updates (status churn) concern no CRR.
func (c *Controller) podUpdated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != cur.UID || old.Spec.NodeName != cur.Spec.NodeName ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) || old.Status.Phase != cur.Status.Phase {
		c.enqueueIndexed(podIndex, cur.Namespace+"/"+cur.Name)
	}
}

// leaseChanged enqueues the CRRs on the node of a daemon heartbeat Lease.
func (c *Controller) leaseChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok || lease.Namespace != c.namespace {
		return
	}
	node, ok := strings.CutPrefix(lease.Name, heartbeat.LeasePrefix)
	if !ok || node == "" {
		return
	}
	c.enqueueIndexed(nodeIndex, node)
}
