package daemonset

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

// claimPods returns the pods the DaemonSet controls once it has adopted the orphans its selector
// matches and released those it no longer matches, as the built-in controllers do. (CloneSet's
// claim is the same protocol on its own type; the DaemonSet's is written for its own.)
func (c *Controller) claimPods(ctx context.Context, ds *appsv1beta1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	objs, err := c.podIndex.ByIndex(ownerIndex, string(ds.UID))
	if err != nil {
		return nil, fmt.Errorf("listing the DaemonSet's pods: %w", err)
	}
	var out []*corev1.Pod
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if selector.Matches(labels.Set(pod.Labels)) || pod.DeletionTimestamp != nil {
			out = append(out, pod)
			continue
		}
		if err := c.release(ctx, ds, pod); err != nil {
			return nil, err
		}
	}
	orphans, err := c.pods.Pods(ds.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	checked := false
	for _, pod := range orphans {
		if metav1.GetControllerOfNoCopy(pod) != nil || pod.DeletionTimestamp != nil {
			continue
		}
		if !checked {
			// Adopt only for a DaemonSet that still exists as cached: a stale copy must not.
			fresh, err := c.kruiseClient.AppsV1beta1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("rechecking the DaemonSet before adopting pods: %w", err)
			}
			if fresh.UID != ds.UID || fresh.DeletionTimestamp != nil {
				return out, nil
			}
			checked = true
		}
		adopted, err := c.adopt(ctx, ds, pod)
		if err != nil {
			return nil, err
		}
		if adopted != nil {
			out = append(out, adopted)
		}
	}
	return out, nil
}

func (c *Controller) adopt(ctx context.Context, ds *appsv1beta1.DaemonSet, pod *corev1.Pod) (*corev1.Pod, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		"uid":             pod.UID,
	}})
	if err != nil {
		return nil, err
	}
	out, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
		return nil, nil // gone, or no longer the pod we saw
	}
	if err != nil {
		return nil, fmt.Errorf("adopting pod %s: %w", pod.Name, err)
	}
	klog.FromContext(ctx).Info("Adopted pod", "pod", klog.KObj(pod))
	return out, nil
}

func (c *Controller) release(ctx context.Context, ds *appsv1beta1.DaemonSet, pod *corev1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": ds.UID}},
		"uid":             pod.UID,
	}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("releasing pod %s: %w", pod.Name, err)
	}
	klog.FromContext(ctx).Info("Released pod: it no longer matches the selector", "pod", klog.KObj(pod))
	return nil
}
