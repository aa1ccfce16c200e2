package crr

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

// sync brings one CRR a step further. It returns when to look at it again
// (zero: only on the next event).
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil // not ours; never retried
	}
	crr, err := c.crrLister.ContainerRecreateRequests(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading CRR %s from the cache: %w", key, err)
	}
	logger := klog.FromContext(ctx).WithValues("crr", klog.KObj(crr), "pod", klog.KRef(crr.Namespace, crr.Spec.PodName))
	ctx = klog.NewContext(ctx, logger)

	if grace := meta.FindStatusCondition(crr.Status.Conditions, appsv1alpha1.ContainerRecreateRequestPreRecreateGrace); grace != nil &&
		crr.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] != unreadyAcquiredValue(grace.LastTransitionTime.Time) {
		return 0, c.recordUnreadyAcquired(ctx, crr, grace.LastTransitionTime.Time)
	}
	if crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
		return c.syncFinished(ctx, crr)
	}
	if deadline, ok := activeDeadline(crr); ok && !c.clock.Now().Before(deadline) {
		return 0, c.finish(ctx, crr, ReasonDeadlineExceeded, fmt.Sprintf("exceeded activeDeadlineSeconds (%ds)", *crr.Spec.ActiveDeadlineSeconds))
	}
	if !appsv1alpha1.IsAdmitted(crr) || !appsv1alpha1.IsRouted(crr) {
		return c.admit(ctx, crr)
	}
	if crr.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey] != "true" {
		return 0, c.restoreActive(ctx, crr)
	}
	return c.syncActive(ctx, crr)
}

// unreadyAcquiredValue is the unready-acquired annotation of an unready period that began at since.
func unreadyAcquiredValue(since time.Time) string { return since.UTC().Format(time.RFC3339) }

// recordUnreadyAcquired writes the unready-acquired annotation of a request whose unready period
// began at since (its PreRecreateGrace condition) but that lacks it, or carries another value (a
// creator's, which admission overwrites): admission writes it in the
// routing patch, after the Admitted condition, and a request the webhook routed at create is
// acted on by the daemon as soon as it is admitted, so the daemon's first status write can make
// that patch fail with a conflict. OpenKruise's clients read the annotation; a merge patch of it
// alone touches nothing else.
func (c *Controller) recordUnreadyAcquired(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, since time.Time) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: unreadyAcquiredValue(since),
	}}})
	if err != nil {
		return fmt.Errorf("encoding the unready-acquired patch of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	_, err = c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the unready-acquired annotation of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	return nil
}

// restoreActive puts back the active label of an admitted, unfinished
// request. Admission writes it together with the routing labels, so only
// someone else took it away: a user may (as in OpenKruise, whose admission
// does not protect it), but kruise-daemon watches only requests that carry
// it, and the request would stay unfinished until its deadline, or for
// ever. A merge patch touches the label alone; the resourceVersion read
// makes it fail with a conflict if the object changed since.
func (c *Controller) restoreActive(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":          map[string]string{appsv1alpha1.ContainerRecreateRequestActiveKey: "true"},
		"resourceVersion": crr.ResourceVersion,
	}})
	if err != nil {
		return fmt.Errorf("encoding the patch restoring the active label of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	if _, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("restoring the active label of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	klog.FromContext(ctx).Info("Restored the active label of an unfinished CRR")
	c.recorder.Eventf(crr, corev1.EventTypeWarning, ReasonActiveLabelRestored,
		"label %s was removed from this unfinished request; restored (kruise-daemon acts only on requests that carry it)",
		appsv1alpha1.ContainerRecreateRequestActiveKey)
	return nil
}

// activeDeadline is when the CRR's activeDeadlineSeconds ends, if it has one.
func activeDeadline(crr *appsv1alpha1.ContainerRecreateRequest) (time.Time, bool) {
	ads := crr.Spec.ActiveDeadlineSeconds
	if ads == nil {
		return time.Time{}, false
	}
	return crr.CreationTimestamp.Add(durations.Seconds(*ads)), true
}

// syncActive completes an admitted CRR that can no longer make progress,
// or says when to check it next: at the earliest of its deadline and the
// moment its node's daemon would stop counting as live.
func (c *Controller) syncActive(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) (time.Duration, error) {
	now := c.clock.Now()
	var next time.Time
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}

	if deadline, ok := activeDeadline(crr); ok {
		soonest(deadline)
	}

	if reason, message, err := c.checkPod(ctx, crr); err != nil || reason != "" {
		if err != nil {
			return 0, err
		}
		return 0, c.finish(ctx, crr, reason, message)
	}

	node := crr.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey]
	if liveUntil := c.liveness.liveUntil(node); now.Before(liveUntil) {
		soonest(liveUntil)
	} else {
		// The grace counts from admission (the Admitted condition's
		// transition, on this controller's clock; creation for a request
		// admitted by an earlier release), and from no earlier than this
		// replica's start.
		graceStart := crr.CreationTimestamp.Time
		if cond := appsv1alpha1.AdmittedCondition(crr); cond != nil && cond.LastTransitionTime.After(graceStart) {
			graceStart = cond.LastTransitionTime.Time
		}
		if c.startedAt.After(graceStart) {
			graceStart = c.startedAt
		}
		graceEnd := graceStart.Add(daemonLiveFor)
		if !now.Before(graceEnd) {
			return 0, c.finish(ctx, crr, ReasonNoLiveDaemon, fmt.Sprintf("no live kruise-daemon on node %q", node))
		}
		soonest(graceEnd)
	}
	return next.Sub(now), nil
}

// checkPod says why the CRR's pod can no longer be worked on: it is gone, or
// a new pod of the same name replaced it. The cache's verdict is confirmed
// with the API server before it ends the request.
func (c *Controller) checkPod(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) (reason, message string, err error) {
	uid := types.UID(crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey])
	pod, err := c.podLister.Pods(crr.Namespace).Get(crr.Spec.PodName)
	if err == nil && pod.UID == uid {
		return "", "", nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return "", "", fmt.Errorf("reading pod %s/%s from the cache: %w", crr.Namespace, crr.Spec.PodName, err)
	}
	pod, err = c.getLivePod(ctx, crr.Namespace, crr.Spec.PodName)
	switch {
	case apierrors.IsNotFound(err):
		return ReasonPodGone, "pod has gone", nil
	case err != nil:
		return "", "", err
	case pod.UID != uid:
		return ReasonPodReplaced, "pod was replaced", nil
	}
	return "", "", nil
}

// finish completes an admitted CRR and records why.
func (c *Controller) finish(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, reason, message string) error {
	if err := c.complete(ctx, crr, reason, message, nil); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Completed CRR", "reason", reason, "message", message)
	c.recorder.Event(crr, corev1.EventTypeWarning, reason, message)
	return nil
}

// complete writes phase Completed, the completion time and message, and
// marks every container not yet Succeeded or Failed as Failed, with its
// message from perContainer or else message. The UpdateStatus carries the
// resourceVersion read, so it fails with a conflict if anyone (the daemon
// completing it first, say) wrote since. reason is what
// kruise_crr_completed_total counts the completion under.
func (c *Controller) complete(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, reason, message string, perContainer map[string]string) error {
	upd := crr.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	upd.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
	upd.Status.CompletionTime = &now
	upd.Status.Message = message

	byName := make(map[string]int, len(upd.Status.ContainerRecreateStates))
	for i, st := range upd.Status.ContainerRecreateStates {
		byName[st.Name] = i
	}
	for _, ctr := range upd.Spec.Containers {
		i, ok := byName[ctr.Name]
		if !ok {
			upd.Status.ContainerRecreateStates = append(upd.Status.ContainerRecreateStates,
				appsv1alpha1.ContainerRecreateRequestContainerRecreateState{Name: ctr.Name})
			i = len(upd.Status.ContainerRecreateStates) - 1
		}
		st := &upd.Status.ContainerRecreateStates[i]
		if st.Phase == appsv1alpha1.ContainerRecreateRequestSucceeded || st.Phase == appsv1alpha1.ContainerRecreateRequestFailed {
			continue
		}
		st.Phase = appsv1alpha1.ContainerRecreateRequestFailed
		st.Message = message
		if m, ok := perContainer[ctr.Name]; ok {
			st.Message = m
		}
	}
	if pod := c.routedPod(crr); pod != nil {
		upd.Status.ContainerStatusSnapshot = appsv1alpha1.ContainerStatusSnapshot(upd, pod)
	}
	// Noted before the write: the informer may deliver it before the
	// answer comes back.
	c.ownCompletions.Store(crr.UID, reason)
	if _, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		c.ownCompletions.Delete(crr.UID)
		return fmt.Errorf("completing CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	return nil
}

// syncFinished takes a Completed CRR off the daemons' watch (removes the
// active label) and deletes it once ttlSecondsAfterFinished has passed since
// its completion. It never writes its status. (The podreadiness controller
// releases the pod it may have held not-ready.)
func (c *Controller) syncFinished(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	if _, ok := crr.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]; ok {
		// A merge patch touches the label alone (an update would rewrite the
		// whole spec, see admit); the resourceVersion read makes it fail with
		// a conflict if the object changed since.
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"labels":          map[string]any{appsv1alpha1.ContainerRecreateRequestActiveKey: nil},
			"resourceVersion": crr.ResourceVersion,
		}})
		if err != nil {
			return 0, fmt.Errorf("encoding the patch removing the active label of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
		}
		got, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			return 0, fmt.Errorf("removing the active label of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
		}
		logger.V(2).Info("Removed the active label of a completed CRR")
		crr = got
	}

	ttl := crr.Spec.TTLSecondsAfterFinished
	if ttl == nil {
		return 0, nil
	}
	// completionTime is written with the Completed phase by every writer;
	// should it be missing, creation stands in for it.
	finished := crr.CreationTimestamp.Time
	if crr.Status.CompletionTime != nil {
		finished = crr.Status.CompletionTime.Time
	}
	expiry := finished.Add(time.Duration(*ttl) * time.Second)
	if now := c.clock.Now(); now.Before(expiry) {
		return expiry.Sub(now), nil
	}
	err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Delete(ctx, crr.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &crr.UID, ResourceVersion: &crr.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("deleting CRR %s/%s after its ttlSecondsAfterFinished: %w", crr.Namespace, crr.Name, err)
	}
	logger.V(2).Info("Deleted completed CRR after ttlSecondsAfterFinished", "ttlSeconds", *ttl)
	return 0, nil
}

// routedPod is the request's pod from the cache when it is the one the
// request was routed to; nil otherwise (gone, replaced, never routed).
func (c *Controller) routedPod(crr *appsv1alpha1.ContainerRecreateRequest) *corev1.Pod {
	uid := crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey]
	pod, err := c.podLister.Pods(crr.Namespace).Get(crr.Spec.PodName)
	if uid == "" || err != nil || string(pod.UID) != uid {
		return nil
	}
	return pod
}
