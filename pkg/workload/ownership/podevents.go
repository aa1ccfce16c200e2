package ownership

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/pkg/workload/expectations"
)

// PodEvents turns pod events into work for the controller of a workload kind: a pod's owner
// (the cached workload its controller reference names, with that UID) is queued and its
// expectations observe what they wait for; an orphan queues the workloads that may adopt it.
type PodEvents struct {
	Kind schema.GroupVersionKind
	// Get is the cached workload of Kind named name in namespace; an error when not cached.
	Get func(namespace, name string) (metav1.Object, error)
	// Adopters queues the workloads of an orphan's namespace whose selector matches it.
	Adopters func(orphan metav1.Object)
	Queue    interface{ Add(key string) }
	Expect   *expectations.Scale
	// Versions records the resource version of every pod seen, for the writes the controller
	// waits to see in its cache.
	Versions *expectations.ResourceVersions
	// Noise, when set, says a pod update changes nothing the controller reads: it is then only
	// recorded in Versions.
	Noise func(old, cur *corev1.Pod) bool
}

// OwnerKey is the queue key of the workload controlling obj, when it is cached with that UID.
func (e PodEvents) OwnerKey(obj metav1.Object) (string, bool) {
	ref := Ref(obj, e.Kind)
	if ref == nil {
		return "", false
	}
	w, err := e.Get(obj.GetNamespace(), ref.Name)
	if err != nil || w.GetUID() != ref.UID {
		return "", false
	}
	return obj.GetNamespace() + "/" + ref.Name, true
}

// Register adds the pod owner index of Kind and Handler to the pod informer.
func (e PodEvents) Register(pods cache.SharedIndexInformer) error {
	if err := AddIndex(pods, e.Kind); err != nil {
		return fmt.Errorf("adding the pod owner index: %w", err)
	}
	if _, err := pods.AddEventHandler(e.Handler()); err != nil {
		return fmt.Errorf("adding the pod event handler: %w", err)
	}
	return nil
}

// Handler is the pod informer's event handler.
func (e PodEvents) Handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: e.added, UpdateFunc: e.updated, DeleteFunc: e.deleted}
}

func (e PodEvents) added(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key, ok := e.OwnerKey(pod); ok {
		e.Expect.Observe(key, expectations.Create, expectations.Pods, pod.Name)
		if pod.DeletionTimestamp != nil {
			e.Expect.Observe(key, expectations.Delete, expectations.Pods, pod.Name) // seen first while terminating (a relist)
		}
		e.Queue.Add(key)
		return
	}
	if metav1.GetControllerOfNoCopy(pod) == nil && pod.DeletionTimestamp == nil {
		e.Adopters(pod)
	}
}

func (e PodEvents) updated(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	e.Versions.Observe(cur)
	if e.Noise != nil && e.Noise(old, cur) {
		return
	}
	oldKey, oldOwned := e.OwnerKey(old)
	curKey, curOwned := e.OwnerKey(cur)
	if curOwned && cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		// The deletion asked for shows: a pod being deleted no longer counts, so its
		// replacement need not wait out the grace period (what must wait for it to be gone,
		// a PVC or an ordinal it holds, waits on its own terms).
		e.Expect.Observe(curKey, expectations.Delete, expectations.Pods, cur.Name)
	}
	if oldOwned && (!curOwned || oldKey != curKey) {
		e.Queue.Add(oldKey) // released: the old owner counts one pod less
	}
	if curOwned {
		e.Queue.Add(curKey)
		return
	}
	if metav1.GetControllerOfNoCopy(cur) == nil && cur.DeletionTimestamp == nil && !reflect.DeepEqual(old.Labels, cur.Labels) {
		e.Adopters(cur)
	}
}

func (e PodEvents) deleted(obj any) {
	m, ok := expectations.DeletedObject(obj)
	if !ok {
		return
	}
	e.Versions.Forget(m)
	if key, ok := e.OwnerKey(m); ok {
		e.Expect.ObserveDeleted(key, expectations.Pods, obj)
		e.Queue.Add(key)
	}
}
