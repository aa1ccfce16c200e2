package crrexec

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// syncPod works on the oldest admitted, unfinished CRR of the pod (by
// creation: appsv1alpha1.CreatedBefore); the next one starts once it
// completes. A request kruise-controller has not admitted (its Admitted
// condition) is never acted on, whatever labels or statusContext its
// creator gave it. It returns when to look at the pod again (zero: on the
// next event).
func (e *Executor) syncPod(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil // not ours; never retried
	}
	objs, err := e.crrIndexer.ByIndex(podIndex, key)
	if err != nil {
		return 0, fmt.Errorf("listing the CRRs of pod %s: %w", key, err)
	}
	var crrs []*appsv1alpha1.ContainerRecreateRequest
	for _, obj := range objs {
		if crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok && crr.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted &&
			appsv1alpha1.IsAdmitted(crr) && appsv1alpha1.IsRouted(crr) {
			crrs = append(crrs, crr)
		}
	}
	if len(crrs) == 0 {
		return 0, nil
	}
	sort.Slice(crrs, func(i, j int) bool { return appsv1alpha1.CreatedBefore(crrs[i], crrs[j]) })
	crr := crrs[0]
	logger := klog.FromContext(ctx).WithValues("crr", klog.KObj(crr), "pod", klog.KRef(namespace, name))
	ctx = klog.NewContext(ctx, logger)

	pod, err := e.podLister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The controller completes requests whose pod has gone.
		logger.V(2).Info("Pod not in the cache; waiting")
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	uid := crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey]
	if uid == "" || types.UID(uid) != pod.UID || pod.DeletionTimestamp != nil {
		// Replaced or terminating: the controller completes the request.
		logger.V(2).Info("Pod replaced or terminating; not acting", "podUID", pod.UID, "wantUID", uid)
		return 0, nil
	}
	return e.execute(ctx, crr, pod)
}

// execute takes one CRR as far as it can go now: it stops the containers
// due to be stopped, records which ones are recreated, and completes the
// request when all are done (or one failed under failurePolicy Fail).
func (e *Executor) execute(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	w := e.workFor(crr.UID)
	wctx := klog.NewContext(w.ctx, logger)
	if wctx.Err() != nil {
		return 0, nil // shutting down
	}
	var strategy appsv1alpha1.ContainerRecreateRequestStrategy
	if crr.Spec.Strategy != nil {
		strategy = *crr.Spec.Strategy
	}
	failFast := strategy.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore

	s := &statusWriter{e: e, base: crr}

	// The runtime is asked first: while it cannot answer, the request
	// keeps its phase and only says what it waits for.
	podUID := crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey]
	containers, err := e.runtime.PodContainers(wctx, podUID)
	if err != nil {
		if wctx.Err() != nil {
			return 0, nil
		}
		return 0, e.runtimeUnavailable(ctx, s, fmt.Errorf("listing the containers of pod %s/%s: %w", pod.Namespace, pod.Name, err), err)
	}
	s.clearRuntimeWait()

	s.start()
	for _, ctr := range crr.Spec.Containers {
		if st := s.state(ctr.Name); w.killed[ctr.Name] && !st.IsKilled {
			// Stopped by this work, but that write was lost.
			st.IsKilled = true
			s.set(st)
		}
	}
	if err := s.flush(ctx); err != nil {
		return 0, err
	}

	var after time.Duration
	// blocked: a kill of this CRR is under way, or (orderedRecreate) a
	// container before this one is not done yet.
	blocked := false
	started := begun(s)
	key := podKey(pod.Namespace, pod.Name)
	for _, ctr := range crr.Spec.Containers {
		st := s.state(ctr.Name)
		if finalPhase(st.Phase) {
			continue
		}
		if blocked {
			break
		}
		var d decision
		running, taken, killErr := w.killState(ctr.Name)
		switch {
		case running:
			blocked = true
			continue
		case taken:
			d = killDone(ctx, ctr.Name, killErr)
		default:
			d = decide(ctr, st, strategy, pod, containers, e.clock.Now())
		}
		switch d.action {
		case actKill:
			if w.busy() {
				blocked = true
				continue
			}
			if !started {
				if wait, ok := e.unreadyWait(s.cur(), pod, logger); ok {
					if after > 0 && (wait == 0 || after < wait) {
						wait = after
					}
					return wait, s.flush(ctx)
				}
				started = true
			}
			if !e.stillActive(crr) {
				// Completed or gone since this sync began: the handler
				// cancels; nothing more starts.
				e.cancel(crr.UID, "no longer active")
				return 0, nil
			}
			if st.Phase != appsv1alpha1.ContainerRecreateRequestRecreating {
				st.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
				s.set(st)
				if err := s.flush(ctx); err != nil {
					return 0, err
				}
			}
			w.killStarted[ctr.Name] = e.clock.Now()
			cur, id := s.cur(), d.id
			e.startKill(w, key, ctr.Name, func() error { return e.kill(wctx, cur, pod, ctr, strategy, id) })
			blocked = true
			continue
		case actCancelled:
			return 0, nil
		case actRuntimeGone:
			// The runtime went away during the stop: not the container's
			// fault. The container stays Recreating; once the runtime
			// answers, the next sync stops the same instance again (its
			// preStop hook runs again too) or finds it already recreated.
			return 0, e.runtimeUnavailable(ctx, s, fmt.Errorf("stopping container %s: %w", ctr.Name, killErr), killErr)
		case actKilled:
			w.killed[ctr.Name] = true
			st.IsKilled = true
			s.set(st)
			if err := s.flush(ctx); err != nil {
				return 0, err
			}
			blocked = strategy.OrderedRecreate
			continue
		case actWait:
			if d.after > 0 && (after == 0 || d.after < after) {
				after = d.after
			}
			blocked = strategy.OrderedRecreate
			continue
		case actSucceed:
			st.Phase, st.Message = appsv1alpha1.ContainerRecreateRequestSucceeded, ""
			s.set(st)
			if started, ok := w.killStarted[ctr.Name]; ok {
				e.metrics.duration.Observe(e.clock.Since(started).Seconds())
			}
			logger.Info("Container recreated", "container", ctr.Name)
			continue
		}
		// actFail
		logger.Info("Container could not be recreated", "container", ctr.Name, "reason", d.reason)
		st.Phase, st.Message = appsv1alpha1.ContainerRecreateRequestFailed, d.reason
		s.set(st)
		if failFast {
			break
		}
	}

	if !s.done() && !(failFast && anyFailed(s)) {
		return after, s.flush(ctx)
	}
	failed := s.complete(pod)
	// Forget the work before the write: the update event of our own
	// completion must not count as a cancellation.
	e.finished(crr.UID)
	if err := s.flush(ctx); err != nil {
		return 0, err
	}
	outcome, eventType := outcomeSucceeded, corev1.EventTypeNormal
	if failed {
		outcome, eventType = outcomeFailed, corev1.EventTypeWarning
	}
	e.metrics.completed.WithLabelValues(outcome).Inc()
	msg := s.cur().Status.Message
	logger.Info("Completed CRR", "outcome", outcome, "message", msg)
	e.recorder.Event(s.cur(), eventType, ReasonCompleted, msg)
	return 0, nil
}

func anyFailed(s *statusWriter) bool {
	for _, ctr := range s.cur().Spec.Containers {
		if s.state(ctr.Name).Phase == appsv1alpha1.ContainerRecreateRequestFailed {
			return true
		}
	}
	return false
}

// stillActive reports whether the cache still holds the CRR unfinished. It
// closes the gap between reading the CRR and an event that cancels it.
func (e *Executor) stillActive(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	obj, ok, err := e.crrIndexer.GetByKey(crr.Namespace + "/" + crr.Name)
	if err != nil || !ok {
		return false
	}
	cur, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	return ok && cur.UID == crr.UID && cur.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted
}
