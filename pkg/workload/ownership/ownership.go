// Package ownership is how a kruise workload (CloneSet, Advanced StatefulSet, Advanced
// DaemonSet) knows the pods and PVCs it controls and takes them, as the built-in controllers
// do: by the controller reference, recognised in any version of the workload's group (objects
// made through v1alpha1 keep that version in their reference, OpenKruise #2520); orphans its
// selector matches are adopted, and the pods it controls that no longer match are released.
package ownership

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Ref is obj's controller reference when a workload of kind, in any version of kind's group,
// controls it; nil otherwise.
func Ref(obj metav1.Object, kind schema.GroupVersionKind) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != kind.Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != kind.Group {
		return nil
	}
	return ref
}

// indexName names the index of objects by the namespace and UID of the workload of kind
// controlling them.
func indexName(kind schema.GroupVersionKind) string {
	return "ownership.kruise.io/" + kind.GroupKind().String()
}

// indexKey is the key of the objects in namespace whose controller reference names uid. The
// namespace is part of it because an owner reference can only name an owner of its own
// namespace: anyone who may create a pod in namespace B can write into it the UID of a CloneSet
// in A, and that pod must never be counted (and then deleted, with the PVCs of A's pod of the
// same instance ID) by the CloneSet in A.
func indexKey(namespace string, uid types.UID) string { return namespace + "/" + string(uid) }

// AddIndex indexes inf's objects by the namespace and UID of the workload of kind that controls
// them.
func AddIndex(inf cache.SharedIndexInformer, kind schema.GroupVersionKind) error {
	return inf.AddIndexers(cache.Indexers{indexName(kind): func(obj any) ([]string, error) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil
		}
		if ref := Ref(m, kind); ref != nil {
			return []string{indexKey(m.GetNamespace(), ref.UID)}, nil
		}
		return nil, nil
	}})
}

// Owned lists the objects of indexer (one AddIndex was given kind) that owner, a workload of
// kind, controls: those in owner's namespace whose controller reference names its UID.
func Owned[T any](indexer cache.Indexer, kind schema.GroupVersionKind, owner metav1.Object) ([]T, error) {
	objs, err := indexer.ByIndex(indexName(kind), indexKey(owner.GetNamespace(), owner.GetUID()))
	if err != nil {
		return nil, fmt.Errorf("listing what the %s controls: %w", kind.Kind, err)
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// Selecting is the workloads of ws whose selector (selectorOf) is valid, not empty, and matches
// obj's labels: those that may adopt obj when it is an orphan.
func Selecting[W any](obj metav1.Object, ws []W, selectorOf func(W) *metav1.LabelSelector) []W {
	var out []W
	for _, w := range ws {
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(w))
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// Claim is one workload's claim on the pods of its namespace.
type Claim struct {
	// Client writes the pods' owner references.
	Client corev1client.PodsGetter
	// Owner is the workload as cached, of Kind.
	Owner metav1.Object
	Kind  schema.GroupVersionKind
	// Selector is the owner's pod selector.
	Selector labels.Selector
	// Recheck reads the owner from the API server. Orphans are adopted only for an owner that
	// still exists with the cached UID and is not being deleted: a stale copy must not adopt.
	Recheck func(ctx context.Context) (metav1.Object, error)
	// Adoptable says whether an orphan may be adopted (one being deleted never is); nil: all.
	Adoptable func(*corev1.Pod) bool
}

// Pods returns the pods the owner controls once it has released those of owned (the pods its
// controller reference names) that its selector no longer matches, and adopted the orphans
// among candidates (the namespace's pods its selector matches). A pod being deleted is kept,
// never released: it is on its way out. A pod gone or replaced meanwhile is skipped.
func (c Claim) Pods(ctx context.Context, owned, candidates []*corev1.Pod) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, pod := range owned {
		if c.Selector.Matches(labels.Set(pod.Labels)) || pod.DeletionTimestamp != nil {
			out = append(out, pod)
			continue
		}
		if _, err := c.patch(ctx, pod, []map[string]any{{"$patch": "delete", "uid": c.Owner.GetUID()}}); err != nil {
			return nil, fmt.Errorf("releasing pod %s: %w", pod.Name, err)
		}
		klog.FromContext(ctx).Info("Released pod: it no longer matches the selector", "pod", klog.KObj(pod))
	}
	checked := false
	for _, pod := range candidates {
		if metav1.GetControllerOfNoCopy(pod) != nil || pod.DeletionTimestamp != nil || (c.Adoptable != nil && !c.Adoptable(pod)) {
			continue
		}
		if !checked {
			fresh, err := c.Recheck(ctx)
			if err != nil {
				return nil, fmt.Errorf("rechecking the %s before adopting pods: %w", c.Kind.Kind, err)
			}
			if fresh.GetUID() != c.Owner.GetUID() || fresh.GetDeletionTimestamp() != nil {
				return out, nil
			}
			checked = true
		}
		ref := metav1.NewControllerRef(c.Owner, c.Kind)
		adopted, err := c.patch(ctx, pod, []metav1.OwnerReference{*ref})
		if err != nil {
			return nil, fmt.Errorf("adopting pod %s: %w", pod.Name, err)
		}
		if adopted != nil { // the pod as the API server has it (a cache may keep orphans lean)
			klog.FromContext(ctx).Info("Adopted pod", "pod", klog.KObj(pod))
			out = append(out, adopted)
		}
	}
	return out, nil
}

// patch merges refs into the pod's owner references, guarded by its UID, and returns the pod
// written; nil (and no error) when the pod is gone or replaced meanwhile.
func (c Claim) patch(ctx context.Context, pod *corev1.Pod, refs any) (*corev1.Pod, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": pod.UID}})
	if err != nil {
		return nil, err
	}
	out, err := c.Client.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
		return nil, nil
	}
	return out, err
}
