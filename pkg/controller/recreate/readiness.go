package recreate

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nodekruise/kruise/pkg/readinessgate"
	"k8s.io/client-go/tools/cache"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Event reasons of the pod readiness the controller owns for
// strategy.unreadyGracePeriodSeconds.
const (
	ReasonMarkedUnready = "MarkedUnready"
	ReasonRestoredReady = "RestoredReady"
)

// Reasons of the KruisePodReady condition the controller writes. Only a
// False condition with unreadyReason is ours to set back to True.
const (
	unreadyReason  = "ContainerRecreating"
	restoredReason = "ContainerRecreateFinished"
)

// needsUnready reports whether the CRR asks for the pod to be not-ready
// before its first kill.
func needsUnready(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	s := crr.Spec.Strategy
	return s != nil && s.UnreadyGracePeriodSeconds != nil && *s.UnreadyGracePeriodSeconds > 0
}

// markedByUs reports whether the pod's KruisePodReady is False because the
// controller set it so.
func markedByUs(pod *corev1.Pod) bool {
	c := readinessgate.Condition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == unreadyReason
}

// markUnready sets the pod's KruisePodReady to False for crr, before the
// CRR is admitted, and returns when the pod's unready period began (the
// condition's lastTransitionTime). A condition already False keeps its
// transition time: the pod has been not-ready since then. One set False by
// someone else is left as it is. Otherwise the condition is written even
// when already ours, naming this CRR: the write moves the pod's
// resourceVersion, so a concurrent restoreReady computed without this CRR
// fails its precondition and decides again.
func (c *Controller) markUnready(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) (time.Time, error) {
	message := fmt.Sprintf("ContainerRecreateRequest %s is recreating containers", crr.Name)
	since := metav1.NewTime(c.clock.Now().Truncate(time.Second))
	if cur := readinessgate.Condition(pod); cur != nil && cur.Status == corev1.ConditionFalse {
		since = cur.LastTransitionTime
		if cur.Reason != unreadyReason || cur.Message == message {
			return since.Time, nil
		}
	}
	cond := corev1.PodCondition{
		Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse,
		Reason: unreadyReason, Message: message, LastTransitionTime: since,
	}
	if err := c.patchCondition(ctx, pod, cond); err != nil {
		return time.Time{}, err
	}
	klog.FromContext(ctx).Info("Marked pod not-ready", "condition", appsv1alpha1.KruisePodReadyConditionType, "since", since.Time)
	c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonMarkedUnready, "Set condition %s=False on pod %s", appsv1alpha1.KruisePodReadyConditionType, pod.Name)
	return since.Time, nil
}

// restoreReady sets KruisePodReady back to True once crr has finished,
// provided the controller set it False and no other unfinished CRR of the
// pod needs it not-ready (the last of them restores it). The decision is
// confirmed on the live pod and written with its resourceVersion as a
// precondition.
func (c *Controller) restoreReady(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) error {
	if !needsUnready(crr) {
		return nil
	}
	logger := klog.FromContext(ctx)
	uid := types.UID(crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey])
	ours := func(pod *corev1.Pod) bool { return (uid == "" || pod.UID == uid) && markedByUs(pod) }

	pod, err := c.podLister.Pods(crr.Namespace).Get(crr.Spec.PodName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s/%s from the cache: %w", crr.Namespace, crr.Spec.PodName, err)
	}
	if !ours(pod) {
		return nil
	}
	objs, err := c.crrIndexer.ByIndex(podIndex, crr.Namespace+"/"+crr.Spec.PodName)
	if err != nil {
		return fmt.Errorf("listing the CRRs of pod %s/%s: %w", crr.Namespace, crr.Spec.PodName, err)
	}
	for _, obj := range objs {
		if other, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok && other.UID != crr.UID && needsUnready(other) {
			logger.V(2).Info("Pod stays not-ready for another CRR", "other", klog.KObj(other))
			return nil
		}
	}
	pod, err = c.getLivePod(ctx, crr.Namespace, crr.Spec.PodName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !ours(pod) {
		return nil
	}
	cond := corev1.PodCondition{
		Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionTrue,
		Reason: restoredReason, LastTransitionTime: metav1.NewTime(c.clock.Now().Truncate(time.Second)),
	}
	if err := c.patchCondition(ctx, pod, cond); err != nil {
		return err
	}
	logger.Info("Restored pod readiness", "condition", appsv1alpha1.KruisePodReadyConditionType)
	c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonRestoredReady, "Set condition %s=True on pod %s", appsv1alpha1.KruisePodReadyConditionType, pod.Name)
	return nil
}

// patchCondition writes one condition of the pod's status with a strategic
// merge patch (conditions merge by type, so no other condition is touched),
// carrying the resourceVersion read: a pod changed since fails with a
// conflict and the caller decides again.
func (c *Controller) patchCondition(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition) error {
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the %s patch: %w", cond.Type, err)
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("setting condition %s=%s on pod %s/%s: %w", cond.Type, cond.Status, pod.Namespace, pod.Name, err)
	}
	return nil
}

// crrDeleted remembers a deleted CRR that may have left its pod not-ready, so
// that its next sync restores the pod as a completion would (the CRR is gone
// from the cache by then).
func (c *Controller) crrDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok || !needsUnready(crr) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(crr)
	if err != nil {
		return
	}
	c.deletedMu.Lock()
	c.deleted[key] = crr
	c.deletedMu.Unlock()
	c.queue.Add(key)
}

// restoreAfterDelete runs the readiness restore for a CRR deleted under key,
// if any, and forgets it once that succeeded.
func (c *Controller) restoreAfterDelete(ctx context.Context, key string) error {
	c.deletedMu.Lock()
	crr := c.deleted[key]
	c.deletedMu.Unlock()
	if crr == nil {
		return nil
	}
	if err := c.restoreReady(ctx, crr); err != nil {
		return err
	}
	c.deletedMu.Lock()
	if c.deleted[key] == crr {
		delete(c.deleted, key)
	}
	c.deletedMu.Unlock()
	return nil
}
