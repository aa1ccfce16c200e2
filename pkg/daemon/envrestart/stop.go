package envrestart

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/crrexec"
)

// startStop stops instance v.id of container in the background: a stop
// runs the preStop hook and can take the pod's whole grace period, which
// must not hold a worker. The instance is marked first, so no other sync
// stops it again; the stop's end queues the pod, whose next sync finds the
// instance not running (or the kubelet's new one, whose env is current).
func (r *Restarter) startStop(ctx context.Context, key string, pod *corev1.Pod, container string, v verdict) {
	if !r.mem.beginStop(key, pod.UID, v.id) {
		return
	}
	logger := klog.FromContext(ctx).WithValues("container", container, "containerID", v.id)
	ctx = klog.NewContext(ctx, logger)
	stale := strings.Join(v.stale, ", ")
	reason, why := ReasonRestarted, fmt.Sprintf("env %s comes from pod metadata that changed", stale)
	if v.restart {
		reason, why = ReasonRestartedForUpdate, "the pod's in-place update restarts it ("+pub.RestartedAtAnnotationKey+" changed)"
		logger.Info("Restarting container: the pod's in-place update restarts it")
	} else {
		logger.Info("Restarting container: its env from pod metadata is out of date", "env", stale)
	}
	r.stopsStarted.Add(1)
	r.stops.Add(1)
	go func() {
		defer r.stops.Done()
		defer utilruntime.HandleCrashWithContext(ctx)
		err := r.stopper.Stop(ctx, crrexec.StopRequest{
			Pod: pod, Container: container, ID: v.id,
			PreStopDone: func(res crrexec.Result) {
				switch {
				case errors.Is(res.Err, crrexec.ErrHookNotSupported):
					r.recorder.Eventf(pod, corev1.EventTypeWarning, crrexec.ReasonPreStopNotSupported, "Container %s: %v", container, res.Err)
				case res.Err != nil:
					r.recorder.Eventf(pod, corev1.EventTypeWarning, crrexec.ReasonPreStopFailed, "PreStop hook of container %s failed: %v", container, res.Err)
				}
			},
		})
		r.mem.endStop(key, pod.UID, v.id, err == nil)
		switch {
		case err == nil:
			r.metrics.count(resultRestarted)
			r.recorder.Eventf(pod, corev1.EventTypeNormal, reason,
				"Stopped container %s (%s) for the kubelet to start it again: %s", container, v.id, why)
			r.queue.Add(key)
		case errors.Is(err, crrexec.ErrStopCancelled):
			// The daemon is stopping; the next one decides afresh.
			logger.Info("Restart of container cancelled", "reason", err.Error())
		default:
			msg := cri.Redact(err.Error())
			logger.Info("Restarting container failed; will try again", "err", msg)
			r.metrics.count(resultFailed)
			r.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonRestartFailed, "Stopping container %s (%s) failed: %s", container, v.id, msg)
			r.queue.AddRateLimited(key)
		}
	}()
}
