package statefulset

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// claimPods returns the pods the set controls once it has adopted the orphans its selector
// matches and released the pods it no longer matches, as the built-in controllers do. The
// CloneSet controller has the same steps for its own kind; they differ in the kind and the
// clients, not in a way a shared helper would save much of.
func (c *Controller) claimPods(ctx context.Context, set *appsv1beta1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	objs, err := c.podIndex.ByIndex(ownerIndex, string(set.UID))
	if err != nil {
		return nil, fmt.Errorf("listing the StatefulSet's pods: %w", err)
	}
	var out []*corev1.Pod
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if selector.Matches(labels.Set(pod.Labels)) || pod.DeletionTimestamp != nil {
			out = append(out, pod)
			continue
		}
		if _, err := c.patchOwner(ctx, pod, map[string]any{"ownerReferences": []map[string]any{{"$patch": "delete", "uid": set.UID}}}); err != nil {
			return nil, fmt.Errorf("releasing pod %s: %w", pod.Name, err)
		}
		klog.FromContext(ctx).Info("Released pod: it no longer matches the selector", "pod", klog.KObj(pod))
	}
	orphans, err := c.pods.Pods(set.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	checked := false
	for _, pod := range orphans {
		if metav1.GetControllerOfNoCopy(pod) != nil || pod.DeletionTimestamp != nil || Finished(pod) {
			continue
		}
		if !checked {
			// Adopt only for a set that still exists as cached: a stale copy must not.
			fresh, err := c.kruiseClient.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("rechecking the StatefulSet before adopting pods: %w", err)
			}
			if fresh.UID != set.UID || fresh.DeletionTimestamp != nil {
				return out, nil
			}
			checked = true
		}
		ref := metav1.NewControllerRef(set, controllerKind)
		adopted, err := c.patchOwner(ctx, pod, map[string]any{"ownerReferences": []metav1.OwnerReference{*ref}})
		if err != nil {
			return nil, fmt.Errorf("adopting pod %s: %w", pod.Name, err)
		}
		if adopted != nil { // the pod as the API server has it: the cache keeps orphans lean
			klog.FromContext(ctx).Info("Adopted pod", "pod", klog.KObj(pod))
			out = append(out, adopted)
		}
	}
	return out, nil
}

// patchOwner patches the pod's owner references, guarded by its UID, and returns the pod
// written; nil (and no error) when the pod is gone or replaced meanwhile.
func (c *Controller) patchOwner(ctx context.Context, pod *corev1.Pod, meta map[string]any) (*corev1.Pod, error) {
	meta["uid"] = pod.UID
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, err
	}
	out, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
		return nil, nil
	}
	return out, err
}
