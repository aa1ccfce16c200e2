package podreadiness

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
)

// staleInCache reports whether, by the caches alone, the pod is held
// not-ready for a request that has finished or is not there. Cheap enough
// for an event handler; sync confirms with the API server.
func (c *Controller) staleInCache(pod *corev1.Pod) bool {
	if c.crrLister == nil {
		return false
	}
	if _, orphaned := readinessgate.WithoutHolders(pod, func(readinessgate.Holder) bool { return false }, metav1.Time{}); orphaned {
		return true // held by kruise with no holder named: nothing else releases it
	}
	for _, h := range readinessgate.Holders(pod) {
		if h.UserAgent != readinessgate.CRRUserAgent {
			continue
		}
		ns, name, ok := strings.Cut(h.Key, "/")
		if !ok {
			continue
		}
		crr, err := c.crrLister.ContainerRecreateRequests(ns).Get(name)
		if err != nil || finished(crr) {
			return true
		}
	}
	return false
}

// finished reports whether a request no longer needs its pod not-ready.
func finished(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	return crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted || crr.DeletionTimestamp != nil
}

// release drops the pod's holders whose request has finished or is gone,
// as the API server says (a cache can miss a request created a moment
// ago), and sets the condition True when none is left.
func (c *Controller) release(ctx context.Context, pod *corev1.Pod) error {
	if c.crrLister == nil || !c.staleInCache(pod) {
		return nil
	}
	stale := map[readinessgate.Holder]bool{}
	for _, h := range readinessgate.Holders(pod) {
		if h.UserAgent != readinessgate.CRRUserAgent {
			continue
		}
		gone, err := c.requestDone(ctx, h.Key)
		if err != nil {
			return err
		}
		stale[h] = gone
	}
	cond, changed := readinessgate.WithoutHolders(pod, func(h readinessgate.Holder) bool { return stale[h] }, metav1.NewTime(c.clock.Now()))
	if !changed {
		return nil
	}
	if err := c.patchCondition(ctx, pod, cond); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	logger.Info("Released pod readiness held for finished ContainerRecreateRequests", "pod", klog.KObj(pod),
		"condition", cond.Type, "status", cond.Status, "holders", cond.Message)
	return nil
}

// requestDone reports whether the request "namespace/name" has finished or
// does not exist, reading it from the API server.
func (c *Controller) requestDone(ctx context.Context, key string) (bool, error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" {
		return true, nil // no request can have that key
	}
	crr, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading ContainerRecreateRequest %s: %w", key, err)
	}
	return finished(crr), nil
}

// patchCondition writes one condition of the pod's status with a strategic
// merge patch (conditions merge by type) carrying the resourceVersion read:
// a pod changed since fails with a conflict and is decided again.
func (c *Controller) patchCondition(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition) error {
	patch, err := readinessgate.StatusPatch(pod, cond)
	if err != nil {
		return fmt.Errorf("encoding the condition patch: %w", err)
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting %s=%s on pod %s/%s: %w", cond.Type, cond.Status, pod.Namespace, pod.Name, err)
	}
	return nil
}
