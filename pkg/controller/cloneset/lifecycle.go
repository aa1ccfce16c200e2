package cloneset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
)

// setLifecycleState writes decision d's state on pod: the KruisePodReady condition first (so the
// pod leaves its Services before a hook's owner sees the state), then the state label.
func (c *Controller) setLifecycleState(ctx context.Context, p *pass, pod *corev1.Pod, d lifecycle.Decision) error {
	if err := c.patchReadiness(ctx, p, pod, d.State); err != nil {
		return err
	}
	patch, err := d.Patch(pod, c.clock)
	if err != nil || patch == nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting lifecycle state %s on pod %s: %w", d.State, pod.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Set lifecycle state", "pod", klog.KObj(pod), "state", d.State, "reason", d.Reason)
	return nil
}

// patchReadiness gives the pod the KruisePodReady condition its lifecycle state asks for, if it
// does not have it.
func (c *Controller) patchReadiness(ctx context.Context, p *pass, pod *corev1.Pod, state pub.LifecycleStateType) error {
	patch, err := lifecycle.ReadinessPatch(pod, p.cs.Spec.Lifecycle, state, c.clock)
	if err != nil || patch == nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the KruisePodReady condition of pod %s: %w", pod.Name, err)
	}
	return nil
}
