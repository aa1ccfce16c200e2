package crr

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
)

// ReasonMarkedUnready is the Event recorded on a CRR when its pod is held
// not-ready for strategy.unreadyGracePeriodSeconds. The pod is released by
// the podreadiness controller once the request has finished or is gone.
const ReasonMarkedUnready = "MarkedUnready"

// needsUnready reports whether the CRR asks for the pod to be not-ready
// before its first kill.
func needsUnready(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	s := crr.Spec.Strategy
	return s != nil && s.UnreadyGracePeriodSeconds != nil && *s.UnreadyGracePeriodSeconds > 0
}

// markUnready adds crr to the holders of the pod's KruisePodReady condition
// (False while it has any), before the CRR is admitted, and returns when
// the pod's unready period began: the condition's lastTransitionTime, kept
// when it was False already. The write carries the pod's resourceVersion,
// so a concurrent release computed without this CRR fails and decides again.
func (c *Controller) markUnready(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) (time.Time, error) {
	holder := readinessgate.CRRHolder(crr.Namespace, crr.Name)
	cond, changed := readinessgate.WithHolder(pod, holder, metav1.NewTime(c.clock.Now().Truncate(time.Second)))
	if !changed {
		return cond.LastTransitionTime.Time, nil
	}
	if err := c.patchCondition(ctx, pod, cond); err != nil {
		return time.Time{}, err
	}
	klog.FromContext(ctx).Info("Marked pod not-ready", "condition", appsv1alpha1.KruisePodReadyConditionType,
		"since", cond.LastTransitionTime.Time, "holders", cond.Message)
	c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonMarkedUnready, "Set condition %s=False on pod %s", appsv1alpha1.KruisePodReadyConditionType, pod.Name)
	return cond.LastTransitionTime.Time, nil
}

// patchCondition writes one condition of the pod's status with a strategic
// merge patch (conditions merge by type, so no other condition is touched),
// carrying the resourceVersion read: a pod changed since fails with a
// conflict and the caller decides again.
func (c *Controller) patchCondition(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition) error {
	data, err := readinessgate.StatusPatch(pod, cond)
	if err != nil {
		return fmt.Errorf("encoding the %s patch: %w", cond.Type, err)
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("setting condition %s=%s on pod %s/%s: %w", cond.Type, cond.Status, pod.Namespace, pod.Name, err)
	}
	return nil
}
