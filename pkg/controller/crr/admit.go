package crr

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/crradmit"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
)

// Event reasons recorded on CRRs.
const (
	ReasonAdmitted         = "Admitted"
	ReasonInvalidRequest   = "InvalidRequest"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonPodGone          = "PodGone"
	ReasonPodReplaced      = "PodReplaced"
	ReasonNoLiveDaemon     = "NoLiveDaemon"
	// ReasonActiveLabelRestored: someone removed (or changed) the active
	// label of an unfinished request, which hides it from the daemon; the
	// controller put it back.
	ReasonActiveLabelRestored = "ActiveLabelRestored"
)

// defaultPodStartWait bounds how long a request without
// activeDeadlineSeconds waits for its pod to be scheduled and start.
const defaultPodStartWait = 10 * time.Minute

// ReasonWaitingForPod is the Event recorded when a request starts waiting
// for its pod to run.
const ReasonWaitingForPod = "WaitingForPod"

// admit takes a request that is not yet admitted, or whose admission was
// cut short, a step further: it completes one that can never be carried out,
// lets one whose pod is still starting wait, and otherwise admits it in
// two writes. First its status: the Admitted condition, which only this
// controller writes (status is a subresource the request's creator does not
// hold), and is what the daemon acts on. Then one patch of what the daemon
// needs in its metadata and spec: the routing labels and, per container,
// the running instance and the pod's preStop hook and ports.
//
// The pod is read from the API server, not the cache: admission happens once
// per request, and a pod that has just started would look not running (or
// missing) in a cache that lags.
func (c *Controller) admit(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) (time.Duration, error) {
	pod, err := c.getLivePod(ctx, crr.Namespace, crr.Spec.PodName)
	if apierrors.IsNotFound(err) {
		if set := crradmit.CreatorSetFields(crr); len(set) > 0 {
			return 0, c.reject(ctx, crr, crradmit.ReadOnlyMessage(set), nil)
		}
		return 0, c.reject(ctx, crr, crradmit.PodNotFoundMessage(crr.Spec.PodName), nil)
	}
	if err != nil {
		return 0, err
	}
	if cond := appsv1alpha1.AdmittedCondition(crr); cond != nil && cond.Status == metav1.ConditionTrue && !strings.Contains(cond.Message, string(pod.UID)) {
		// Admitted for a pod that has since been replaced by one of the
		// same name, before the routing was written.
		return 0, c.finish(ctx, crr, ReasonPodReplaced, "pod was replaced")
	}
	v := crradmit.Assess(crr, pod)
	// Only admission writes these: the webhook at create, or this
	// controller. Present with other values, they are the creator's.
	if set := crradmit.ForeignFields(crr, pod, v); len(set) > 0 {
		return 0, c.reject(ctx, crr, crradmit.ReadOnlyMessage(set), nil)
	}
	switch {
	case v.Reject != "":
		return 0, c.reject(ctx, crr, v.Reject, v.PerContainer)
	case v.Wait != "":
		return c.waitForPod(ctx, crr, pod, v.Wait)
	}

	if appsv1alpha1.IsRouted(crr) {
		// Routed at create by the webhook: the daemon sees it as soon as it
		// is admitted, so an older request of the pod still unrouted must be
		// routed first (the daemon runs the oldest it sees).
		if ahead := c.olderUnrouted(crr); ahead != nil {
			klog.FromContext(ctx).V(2).Info("CRR waits for an older one of its pod to be routed", "older", klog.KObj(ahead))
			return 0, nil
		}
	}
	var since time.Time
	if needsUnready(crr) && readinessgate.Declared(pod) {
		// Not-ready before the daemon can see the request; the annotation
		// tells it when the unready period it waits out began.
		if since, err = c.markUnready(ctx, crr, pod); err != nil {
			return 0, err
		}
	}
	graceMissing := !since.IsZero() && meta.FindStatusCondition(crr.Status.Conditions, appsv1alpha1.ContainerRecreateRequestPreRecreateGrace) == nil
	if !appsv1alpha1.IsAdmitted(crr) || graceMissing {
		if crr, err = c.writeStatus(ctx, crr, metav1.ConditionTrue, appsv1alpha1.ContainerRecreateRequestReasonAdmitted,
			fmt.Sprintf("pod %q (uid %s) runs on node %q", pod.Name, pod.UID, pod.Spec.NodeName), since); err != nil {
			return 0, err
		}
	}
	if ahead := c.olderUnrouted(crr); ahead != nil {
		// The daemon sees a request only once it is routed, and runs the
		// oldest it sees: routed out of order, a younger request would run
		// first. Routing ahead's update enqueues this one again.
		klog.FromContext(ctx).V(2).Info("CRR waits for an older one of its pod to be routed", "older", klog.KObj(ahead))
		return 0, nil
	}
	return 0, c.route(ctx, crr, pod, v.Statuses, since)
}

// waitForPod records that the request waits for its pod to start, and says
// when to look again: at the end of its wait, unless a pod event comes
// first. The wait is bounded by activeDeadlineSeconds (checked by sync),
// else by defaultPodStartWait.
func (c *Controller) waitForPod(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, why string) (time.Duration, error) {
	end, ok := activeDeadline(crr)
	if !ok {
		end = crr.CreationTimestamp.Add(defaultPodStartWait)
		if !c.clock.Now().Before(end) {
			return 0, c.reject(ctx, crr, fmt.Sprintf("pod %q did not start within %s (set activeDeadlineSeconds to wait longer): %s", pod.Name, defaultPodStartWait, why), nil)
		}
	}
	message := "waiting for the pod to start: " + why
	if cond := appsv1alpha1.AdmittedCondition(crr); cond == nil || cond.Message != message {
		first := cond == nil
		if _, err := c.writeStatus(ctx, crr, metav1.ConditionFalse, appsv1alpha1.ContainerRecreateRequestReasonWaitingForPod, message, time.Time{}); err != nil {
			return 0, err
		}
		klog.FromContext(ctx).V(2).Info("CRR waits for its pod to start", "why", why)
		if first {
			c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonWaitingForPod, "Waiting for pod %s to start: %s", pod.Name, why)
		}
	}
	return max(end.Sub(c.clock.Now()), time.Second), nil
}

// writeStatus sets the request's Admitted condition, phase Pending and its
// creation revision (the resourceVersion read, if none is recorded: before
// this controller's first write, only the creator has written the object),
// and, when unreadySince is set, the PreRecreateGrace condition as of then
// (the unready-acquired annotation in the form OpenKruise's v1beta1 has it).
// It carries the resourceVersion read, so a request changed since is read
// again. It returns the object as written.
func (c *Controller) writeStatus(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest,
	status metav1.ConditionStatus, reason, message string, unreadySince time.Time) (*appsv1alpha1.ContainerRecreateRequest, error) {
	upd := crr.DeepCopy()
	if upd.Status.Phase == "" {
		upd.Status.Phase = appsv1alpha1.ContainerRecreateRequestPending
	}
	if upd.Status.CreationRevision == "" {
		upd.Status.CreationRevision = crr.ResourceVersion
	}
	meta.SetStatusCondition(&upd.Status.Conditions, metav1.Condition{
		Type: appsv1alpha1.ContainerRecreateRequestAdmitted, Status: status, Reason: reason, Message: message,
		ObservedGeneration: crr.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now()),
	})
	if !unreadySince.IsZero() {
		meta.SetStatusCondition(&upd.Status.Conditions, metav1.Condition{
			Type: appsv1alpha1.ContainerRecreateRequestPreRecreateGrace, Status: metav1.ConditionTrue,
			Reason: appsv1alpha1.ContainerRecreateRequestPreRecreateGrace, Message: "the pod is marked not-ready for strategy.unreadyGracePeriodSeconds",
			ObservedGeneration: crr.Generation, LastTransitionTime: metav1.NewTime(unreadySince),
		})
	}
	got, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("writing the admission status of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	return got, nil
}

// route writes, in one JSON patch, what the daemon needs from admission:
// the routing labels, the unready-acquired annotation (since non-zero), and
// per container its running instance, preStop hook and ports.
func (c *Controller) route(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod,
	statuses map[string]*corev1.ContainerStatus, since time.Time) error {
	// One JSON patch writes only what admission adds. An update would send
	// the whole object encoded from Go, which cannot tell an empty list from
	// an absent one. The patch first sets the resourceVersion read: the API
	// server applies the patch to the object it holds, then refuses the
	// result with a conflict if that has changed since.
	patch := crradmit.Patch{{Op: "replace", Path: "/metadata/resourceVersion", Value: crr.ResourceVersion}}
	if !since.IsZero() {
		patch.SetEntries("/metadata/annotations", crr.Annotations, map[string]string{
			appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: since.UTC().Format(time.RFC3339),
		})
	}
	// Labels the creator set are not trusted: these are overwritten.
	patch.SetEntries("/metadata/labels", crr.Labels, crradmit.RoutingLabels(pod))
	// The containers' names and order never change (a rule of the CRD), so
	// an index read here still names the same container on the server.
	for i := range crr.Spec.Containers {
		ctr := &crr.Spec.Containers[i]
		patch = append(patch, crradmit.FillContainer(fmt.Sprintf("/spec/containers/%d", i), ctr, pod, statuses[ctr.Name])...)
	}
	if len(patch) > 1 {
		if done, err := c.patchAdmission(ctx, crr, patch); !done {
			return err
		}
	}
	klog.FromContext(ctx).V(2).Info("Admitted CRR", "node", pod.Spec.NodeName, "podUID", pod.UID)
	c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonAdmitted, "Admitted for pod %s (uid %s) on node %s", pod.Name, pod.UID, pod.Spec.NodeName)
	return nil
}

// patchAdmission sends route's patch (route has nothing to send, but the
// resourceVersion, when the webhook filled the request in at create). done
// is false when the request was not admitted: an error, or completed as
// refused.
func (c *Controller) patchAdmission(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, patch crradmit.Patch) (done bool, err error) {
	body, err := json.Marshal(patch)
	if err != nil {
		return false, fmt.Errorf("encoding the admission patch of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	if _, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.JSONPatchType, body, metav1.PatchOptions{}); err != nil {
		if apierrors.IsInvalid(err) {
			// Retrying the same patch cannot help: the server's validation
			// refuses what admission writes (a node name too long for a
			// label value, say, or a field the creator set meanwhile). The
			// server also answers Invalid when the patch does not apply to
			// the object as it is now, which can only differ from what was
			// read if it changed since; then the completion below carries
			// the resourceVersion read, fails with a conflict, and the
			// request is decided again.
			return false, c.reject(ctx, crr, fmt.Sprintf("the API server refused to admit the request: %v", err), nil)
		}
		return false, fmt.Errorf("admitting CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	return true, nil
}

// reject completes a CRR that cannot be carried out. perContainer holds a
// message for the containers at fault; the others get message.
func (c *Controller) reject(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, message string, perContainer map[string]string) error {
	if err := c.complete(ctx, crr, ReasonInvalidRequest, message, perContainer); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Rejected CRR", "reason", message)
	c.recorder.Event(crr, corev1.EventTypeWarning, ReasonInvalidRequest, message)
	return nil
}

// olderUnrouted returns an unfinished request for the same pod, created
// before crr, that is not routed yet; nil if there is none. A request this
// controller has not written yet has no creation revision: its
// resourceVersion stands in, as it is that revision until someone writes
// the object (and only later if they do).
func (c *Controller) olderUnrouted(crr *appsv1alpha1.ContainerRecreateRequest) *appsv1alpha1.ContainerRecreateRequest {
	objs, err := c.crrIndexer.ByIndex(podIndex, crr.Namespace+"/"+crr.Spec.PodName)
	if err != nil {
		return nil
	}
	self := withCreationRevision(crr)
	for _, obj := range objs {
		o, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
		if !ok || o.UID == crr.UID || o.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted || appsv1alpha1.IsRouted(o) {
			continue
		}
		if appsv1alpha1.CreatedBefore(withCreationRevision(o), self) {
			return o
		}
	}
	return nil
}

// withCreationRevision returns crr with its creation revision filled in
// from its resourceVersion if none is recorded.
func withCreationRevision(crr *appsv1alpha1.ContainerRecreateRequest) *appsv1alpha1.ContainerRecreateRequest {
	if crr.Status.CreationRevision != "" {
		return crr
	}
	c := crr.DeepCopy()
	c.Status.CreationRevision = crr.ResourceVersion
	return c
}

// getLivePod reads the pod from the API server.
func (c *Controller) getLivePod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
	}
	return pod, nil
}
