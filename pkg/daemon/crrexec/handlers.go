package crrexec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// podIndex maps "namespace/podName" to the unfinished CRRs of that pod.
const podIndex = "recreate.kruise.io/pod"

func podKey(namespace, name string) string { return namespace + "/" + name }

// indexByPod indexes unfinished CRRs by their target pod.
func indexByPod(obj any) ([]string, error) {
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok || crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
		return nil, nil
	}
	return []string{podKey(crr.Namespace, crr.Spec.PodName)}, nil
}

func asCRR(obj any) (*appsv1alpha1.ContainerRecreateRequest, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	return crr, ok
}

func (e *Executor) crrAdded(obj any) {
	if crr, ok := asCRR(obj); ok {
		e.queue.Add(podKey(crr.Namespace, crr.Spec.PodName))
	}
}

// crrUpdated cancels the work of a CRR someone else completed, then
// enqueues its pod (the next CRR of the pod may start).
func (e *Executor) crrUpdated(_, cur any) {
	crr, ok := asCRR(cur)
	if !ok {
		return
	}
	if crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
		e.cancel(crr.UID, "completed")
	}
	e.queue.Add(podKey(crr.Namespace, crr.Spec.PodName))
}

// crrDeleted cancels the work of a CRR that left the cache: deleted, or its
// active label was removed.
func (e *Executor) crrDeleted(obj any) {
	crr, ok := asCRR(obj)
	if !ok {
		return
	}
	e.cancel(crr.UID, "left the cache")
	e.queue.Add(podKey(crr.Namespace, crr.Spec.PodName))
}

// podChanged enqueues a pod that has unfinished CRRs: its status (new
// container IDs, readiness) is what a recreate waits for.
func (e *Executor) podChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := podKey(pod.Namespace, pod.Name)
	if objs, err := e.crrIndexer.ByIndex(podIndex, key); err == nil && len(objs) > 0 {
		e.queue.Add(key)
	}
}
