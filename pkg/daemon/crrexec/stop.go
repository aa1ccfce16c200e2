package crrexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// ErrStopCancelled marks a stop abandoned because its context ended.
var ErrStopCancelled = errors.New("cancelled")

// errCancelled is the executor's name for it.
var errCancelled = ErrStopCancelled

// ContainerStopper is the one runtime call a Stopper makes.
type ContainerStopper interface {
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
}

// Stopper stops one container instance of a pod as the kubelet would: its
// preStop hook, then StopContainer with what is left of the grace period
// (at least minStopTimeout). The kubelet then starts a new instance. The
// CRR executor and the env-from-metadata restarter (package envrestart)
// both stop containers through it.
type Stopper struct {
	runtime ContainerStopper
	prestop *Runner
	clock   clock.PassiveClock
}

// NewStopper returns a Stopper that runs hooks with prestop and stops
// containers through rt; clk times the grace period.
func NewStopper(rt ContainerStopper, prestop *Runner, clk clock.PassiveClock) *Stopper {
	return &Stopper{runtime: rt, prestop: prestop, clock: clk}
}

// StopRequest is one container instance to stop.
type StopRequest struct {
	// Pod holds the container's preStop hook and ports, the pod IP, and
	// the grace period. Only the pod's own hook runs (see preStopFor).
	Pod *corev1.Pod
	// Container is the container's name in the pod spec.
	Container string
	// ID is the bare CRI ID of the instance to stop.
	ID string
	// GracePeriodSeconds, if set, replaces the pod's
	// terminationGracePeriodSeconds (a CRR's own).
	GracePeriodSeconds *int64
	// PreStopDone, if set, is told how the hook went, before the container
	// is stopped; it is not called when there is no hook.
	PreStopDone func(Result)
}

// Stop runs the hook, then stops the container. It returns nil once the
// runtime has stopped it (or it was gone already), an error wrapping
// ErrStopCancelled when ctx ended first (nothing more starts then), or
// StopContainer's error. A failing hook is reported to PreStopDone and
// the container stopped anyway.
func (s *Stopper) Stop(ctx context.Context, req StopRequest) error {
	logger := klog.FromContext(ctx)
	g := grace(appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: req.GracePeriodSeconds}, req.Pod)
	deadline := s.clock.Now().Add(g)
	logger.Info("Stopping container", "grace", g)

	if h, ports := preStopOf(req.Pod, req.Container); h != nil {
		res := s.prestop.Run(ctx, PreStop{
			Handler: h, ContainerID: req.ID, PodIP: req.Pod.Status.PodIP, HostNetwork: req.Pod.Spec.HostNetwork,
			Ports: ports, Deadline: deadline,
		})
		if ctx.Err() != nil {
			return fmt.Errorf("%w during the preStop hook of container %s: %w", ErrStopCancelled, req.Container, ctx.Err())
		}
		if req.PreStopDone != nil {
			req.PreStopDone(res)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w before stopping container %s: %w", ErrStopCancelled, req.Container, err)
	}
	timeout := max(deadline.Sub(s.clock.Now()), minStopTimeout)
	if err := s.runtime.StopContainer(ctx, req.ID, timeout); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w while stopping container %s: %w", ErrStopCancelled, req.Container, err)
		}
		return err
	}
	logger.Info("Stopped container", "timeout", timeout)
	return nil
}
