package crrexec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

// Event reasons the executor records on CRRs and their pods.
const (
	ReasonRecreating          = "Recreating"
	ReasonKilled              = "Killed"
	ReasonKillFailed          = "KillFailed"
	ReasonPreStopFailed       = "PreStopFailed"
	ReasonPreStopNotSupported = "PreStopNotSupported"
	ReasonUnreadyGateMissing  = "UnreadyGateMissing"
	ReasonCompleted           = "Completed"
)

// defaultGrace applies when neither the CRR nor the pod sets a grace period.
const defaultGrace = 30 * time.Second

// minStopTimeout is the least time StopContainer gives a container to stop
// on SIGTERM, even when the preStop hook used up the grace period.
const minStopTimeout = 2 * time.Second

// maxGrace bounds the grace period. The API takes any int64 number of
// seconds, and the runtime calls add a margin to what is left of the grace as
// a time.Duration: near the largest Duration that sum wraps round to a
// deadline in the past, and the stop (or the exec hook) fails at once. 68
// years is as good as for ever.
const maxGrace = math.MaxInt32 * time.Second

// grace is the CRR's terminationGracePeriodSeconds, else the pod's, else 30 s,
// at most maxGrace.
func grace(strategy appsv1alpha1.ContainerRecreateRequestStrategy, pod *corev1.Pod) time.Duration {
	switch {
	case strategy.TerminationGracePeriodSeconds != nil:
		return min(durations.Seconds(*strategy.TerminationGracePeriodSeconds), maxGrace)
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return min(durations.Seconds(*pod.Spec.TerminationGracePeriodSeconds), maxGrace)
	default:
		return defaultGrace
	}
}

// kill stops instance id of the CRR's container through the executor's
// Stopper (preStop hook, then StopContainer with what is left of the grace
// period) and records what happened on the CRR and its pod. ctx is the
// CRR's work context: once it is cancelled nothing more starts and
// errCancelled comes back.
func (e *Executor) kill(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod,
	ctr appsv1alpha1.ContainerRecreateRequestContainer, strategy appsv1alpha1.ContainerRecreateRequestStrategy, id string) error {
	logger := klog.FromContext(ctx).WithValues("container", ctr.Name, "containerID", id)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Recreating container")
	e.event(pod, crr, corev1.EventTypeNormal, ReasonRecreating, "Recreating container %s", ctr.Name)

	err := e.stopper.Stop(ctx, StopRequest{
		Pod: pod, Container: ctr.Name, ID: id, GracePeriodSeconds: strategy.TerminationGracePeriodSeconds,
		PreStopDone: func(res Result) {
			switch {
			case errors.Is(res.Err, ErrHookNotSupported):
				e.event(pod, crr, corev1.EventTypeWarning, ReasonPreStopNotSupported, "Container %s: %v", ctr.Name, res.Err)
			case res.Err != nil:
				e.event(pod, crr, corev1.EventTypeWarning, ReasonPreStopFailed, "PreStop hook of container %s failed: %v", ctr.Name, res.Err)
			}
		},
	})
	switch {
	case err == nil:
		e.event(pod, crr, corev1.EventTypeNormal, ReasonKilled, "Stopped container %s (%s)", ctr.Name, id)
		return nil
	case errors.Is(err, errCancelled):
		return err
	case runtimeGone(err):
		// Not the container's fault: reported as the runtime's (see runtimeUnavailable).
		return fmt.Errorf("stopping the container: %w", err)
	default:
		e.event(pod, crr, corev1.EventTypeWarning, ReasonKillFailed, "Stopping container %s failed: %s", ctr.Name, cri.Redact(err.Error()))
		return errors.New("stopping the container: " + cri.Redact(err.Error()))
	}
}

// preStopFor picks the hook to run before stopping ctr, and the ports to
// resolve it against: always the pod's own lifecycle.preStop, from the pod
// spec (immutable there), never the CRR's copy. A request's creator can
// write that copy in an earlier release or where kruise's admission policy
// is not installed; running it would run a command of their choosing in
// the container, with all it holds, or send a request of their choosing
// from the node: CRRs are no exec API.
func preStopFor(pod *corev1.Pod, ctr appsv1alpha1.ContainerRecreateRequestContainer) (*corev1.LifecycleHandler, []corev1.ContainerPort) {
	return preStopOf(pod, ctr.Name)
}

// preStopOf is the pod's own preStop hook of container name, and its ports.
func preStopOf(pod *corev1.Pod, name string) (*corev1.LifecycleHandler, []corev1.ContainerPort) {
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == name && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			return c.Lifecycle.PreStop, c.Ports
		}
	}
	return nil, nil
}
