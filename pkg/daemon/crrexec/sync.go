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
	resume(s, w)
	if err := s.flush(ctx); err != nil {
		return 0, err
	}

	p := &pass{
		e: e, ctx: ctx, wctx: wctx, logger: logger, w: w, crr: crr, pod: pod, s: s,
		strategy: strategyOf(crr), containers: containers, key: podKey(pod.Namespace, pod.Name), started: begun(s),
	}
	if h := p.walk(); h != nil {
		return h.after, h.err
	}
	if !s.done() && !(p.failFast() && anyFailed(s)) {
		return p.after, s.flush(ctx)
	}
	return 0, e.completeRequest(ctx, s, pod)
}

// resume moves the request to Recreating and records again the stops of
// this work whose write was lost.
func resume(s *statusWriter, w *work) {
	s.start()
	for _, ctr := range s.cur().Spec.Containers {
		if st := s.state(ctr.Name); w.killed[ctr.Name] && !st.IsKilled {
			st.IsKilled = true
			s.set(st)
		}
	}
}

// completeRequest finishes a request every container of which is done (or
// one failed under failurePolicy Fail), and reports how it ended.
func (e *Executor) completeRequest(ctx context.Context, s *statusWriter, pod *corev1.Pod) error {
	uid := s.cur().UID
	failed := s.complete(pod)
	// Forget the work before the write: the update event of our own
	// completion must not count as a cancellation.
	e.finished(uid)
	if err := s.flush(ctx); err != nil {
		return err
	}
	outcome, eventType := outcomeSucceeded, corev1.EventTypeNormal
	if failed {
		outcome, eventType = outcomeFailed, corev1.EventTypeWarning
	}
	e.metrics.completed.WithLabelValues(outcome).Inc()
	msg := s.cur().Status.Message
	klog.FromContext(ctx).Info("Completed CRR", "outcome", outcome, "message", msg)
	e.recorder.Event(s.cur(), eventType, ReasonCompleted, msg)
	return nil
}

// strategyOf is the request's strategy, its zero value when it has none.
func strategyOf(crr *appsv1alpha1.ContainerRecreateRequest) appsv1alpha1.ContainerRecreateRequestStrategy {
	if crr.Spec.Strategy != nil {
		return *crr.Spec.Strategy
	}
	return appsv1alpha1.ContainerRecreateRequestStrategy{}
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
