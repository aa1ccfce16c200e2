package cloneset

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
)

// states writes the lifecycle states of p's pods. The CloneSet's pod versions cover its in-place
// writes only (Wrote unset), as they did before the writer was shared.
func (c *Controller) states(p *pass) lifecycle.Writer {
	return lifecycle.Writer{Client: c.client, Clock: c.clock, Lifecycle: p.cs.Spec.Lifecycle}
}

// setLifecycleState writes decision d's state on pod (lifecycle.Writer.SetState).
func (c *Controller) setLifecycleState(ctx context.Context, p *pass, pod *corev1.Pod, d lifecycle.Decision) error {
	_, err := c.states(p).SetState(ctx, pod, d)
	return err
}
