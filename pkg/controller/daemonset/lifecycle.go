package daemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
)

// removePod takes a pod away through the preDelete hook: a pod holding the hook goes to
// PreparingDelete (not-ready first when the hook says markPodNotReady) and waits; any other pod
// is deleted. It reports whether it wrote anything.
func (c *Controller) removePod(ctx context.Context, p *pass, pod *corev1.Pod) (bool, error) {
	dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.ds.Spec.Lifecycle, Want: lifecycle.WantDelete})
	switch dec.Action {
	case lifecycle.ActionDelete:
		return true, c.deletePod(ctx, p, pod)
	case lifecycle.ActionSetState:
		wrote, err := c.states(p).SetState(ctx, pod, dec)
		if wrote == lifecycle.StateWritten {
			c.recorder.Eventf(p.ds, corev1.EventTypeNormal, ReasonPreparingDelete, "pod %s waits for its preDelete hook before it is deleted", pod.Name)
		}
		return wrote != lifecycle.StateUnchanged || err != nil, err
	case lifecycle.ActionWait:
		// Keep the not-ready mark on while the hook holds the pod.
		return false, c.states(p).PatchReadiness(ctx, pod, dec.State)
	}
	return false, nil
}

// states writes the lifecycle states of p's pods. Advanced DaemonSet's pod versions cover its
// in-place writes only (Wrote unset), as they did before the writer was shared.
func (c *Controller) states(p *pass) lifecycle.Writer {
	return lifecycle.Writer{Client: c.client, Clock: c.clock, Lifecycle: p.ds.Spec.Lifecycle}
}

// deletePod deletes pod, expecting the deletion first.
func (c *Controller) deletePod(ctx context.Context, p *pass, pod *corev1.Pod) error {
	err := c.expect.DeletePod(ctx, c.client.CoreV1(), p.key, pod)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if w := budgetwait.Deletion(pod, err); w != nil {
			// The pod webhook kept the pod for a budget: it waits (DeletePod has dropped the
			// expectation), reported once for the pass, not an error to back off from.
			p.waits.Add(*w)
			return nil
		}
		c.recorder.Eventf(p.ds, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted pod", "pod", klog.KObj(pod), "node", nodefit.TargetNode(pod))
	c.recorder.Eventf(p.ds, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", pod.Name)
	return nil
}
