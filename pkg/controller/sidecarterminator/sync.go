package sidecarterminator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

const (
	// ConditionSidecarTerminated is the pod condition recorded with the
	// pod's phase: True means kruise decided the phase from the main
	// containers and the sidecars are being stopped.
	ConditionSidecarTerminated corev1.PodConditionType = "SidecarTerminated"
	// AnnotationTerminatedAt is set (to the time, RFC 3339) right after the
	// phase is recorded. The kubelet ignores status-only changes of a pod it
	// runs; a metadata change makes it sync the pod at once, see the phase
	// from the API server and stop the remaining containers.
	AnnotationTerminatedAt = "apps.kruise.io/sidecar-terminated-at"
	// LabelSidecarTermination marks the CRRs this controller creates.
	LabelSidecarTermination = "apps.kruise.io/sidecar-termination"
)

// Condition reasons.
const (
	reasonMainsSucceeded = "MainContainersSucceeded"
	reasonMainsFailed    = "MainContainersFailed"
)

// Event reasons recorded on pods.
const (
	ReasonTerminatingSidecars  = "TerminatingSidecars"
	ReasonSidecarImageReplaced = "SidecarImageReplaced"
	ReasonSidecarNotTerminated = "SidecarNotTerminated"
	ReasonInvalidSidecarEnv    = "InvalidSidecarEnv"
	ReasonSidecarKilled        = "SidecarKilled"
	ReasonSidecarStillRunning  = "SidecarStillRunning"
	ReasonPhaseNotRecorded     = "SidecarPhaseNotRecorded"
)

// mechanismImage labels the metric for virtual-kubelet nodes.
const mechanismImage = "image"

// followUpSlack is how long after the pod's grace period a sidecar may
// still run before it is reported (the kubelet should have killed it).
const followUpSlack = 30 * time.Second

// recentExit bounds which SIGKILLed sidecars are reported: a controller
// that starts does not report pods that finished long ago again.
const recentExit = 10 * time.Minute

// sync handles one pod.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, podName, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := c.podLister.Pods(ns).Get(podName)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	p := decide(pod)
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		for _, problem := range p.problems {
			c.report(pod, corev1.EventTypeWarning, ReasonInvalidSidecarEnv, problem)
		}
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pod", klog.KObj(pod), "podUID", pod.UID)
	ctx = klog.NewContext(ctx, logger)
	switch p.step {
	case stepTerminate:
		return c.terminate(ctx, pod, p)
	case stepFollowUp:
		return c.followUp(pod, p)
	case stepNone:
		logger.V(5).Info("Nothing to do", "why", p.why)
	}
	return 0, nil
}

// terminate stops the pod's remaining sidecars by the node's mechanism.
func (c *Controller) terminate(ctx context.Context, pod *corev1.Pod, p plan) (time.Duration, error) {
	node, err := c.nodeLister.Get(pod.Spec.NodeName)
	switch {
	case apierrors.IsNotFound(err):
		// A node object that is gone cannot tell us it was virtual; a
		// real one without its object runs no daemon either. The kubelet
		// there, if any, still honours a recorded phase.
	case err != nil:
		return 0, err
	case node.Labels[appsv1alpha1.VirtualKubeletLabel] == appsv1alpha1.VirtualKubeletValue:
		return 0, c.replaceImages(ctx, pod, p)
	}
	if c.mechanism == MechanismCRR {
		return 0, c.createCRR(ctx, pod, p)
	}
	if c.cacheBehind(pod) {
		// An event from before our last write: its own event follows. A
		// pod that shows our annotation but a Running phase again is one
		// whose phase the kubelet overwrote: that one is recorded again.
		klog.FromContext(ctx).V(4).Info("Cache does not show the recorded phase yet; waiting for its event")
		return 0, nil
	}
	if err := c.recordPhase(ctx, pod, p); err != nil {
		var refused statusRefused
		if errors.As(err, &refused) {
			if live, gerr := c.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); apierrors.IsNotFound(gerr) || (gerr == nil && live.UID != pod.UID) {
				// Refused because the pod was replaced under its name:
				// the new one is synced on its own.
				return 0, nil
			}
			// Someone (RBAC, an admission policy) will not let us write
			// the phase: stopping the sidecars is still better than a Job
			// that never ends.
			c.report(pod, corev1.EventTypeWarning, ReasonPhaseNotRecorded, fmt.Sprintf(
				"Could not record phase %s (%v); stopping sidecars through kruise-daemon instead, so their exit codes will decide the pod's phase",
				p.phase, err))
			return 0, c.createCRR(ctx, pod, p)
		}
		return 0, err
	}
	return 0, nil
}

// recordPhase writes the phase the mains decided, with the
// SidecarTerminated condition, then touches the pod's metadata so the
// kubelet syncs it now: it keeps a terminal phase it reads from the API
// server and stops the pod's remaining containers itself.
func (c *Controller) recordPhase(ctx context.Context, pod *corev1.Pod, p plan) error {
	reason := reasonMainsSucceeded
	if p.phase == corev1.PodFailed {
		reason = reasonMainsFailed
	}
	now := metav1.NewTime(c.clock.Now())
	message := fmt.Sprintf("Main containers finished (%s); stopping sidecars %s", p.summary, strings.Join(names(p.sidecars), ", "))
	status := map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status": map[string]any{
			"phase": p.phase,
			"conditions": []corev1.PodCondition{{
				Type: ConditionSidecarTerminated, Status: corev1.ConditionTrue,
				Reason: reason, Message: message, LastTransitionTime: now,
			}},
		},
	}
	if err := c.patch(ctx, pod, status, "status"); err != nil {
		err = fmt.Errorf("recording phase %s of pod %s/%s: %w", p.phase, pod.Namespace, pod.Name, err)
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return statusRefused{err}
		}
		return err
	}
	stamp := now.UTC().Format(time.RFC3339Nano)
	nudge := map[string]any{"metadata": map[string]any{
		"uid":         pod.UID,
		"annotations": map[string]string{AnnotationTerminatedAt: stamp},
	}}
	if err := c.patch(ctx, pod, nudge); err != nil {
		// The phase is recorded and the Job has its outcome, but until the
		// kubelet syncs the pod for another reason it may write Running
		// back, and the sidecars run on: retry (the pod is decided again).
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			c.report(pod, corev1.EventTypeWarning, ReasonSidecarNotTerminated, fmt.Sprintf(
				"Recorded phase %s but could not set annotation %s, which makes the kubelet stop the sidecars now: %v", p.phase, AnnotationTerminatedAt, err))
		}
		return fmt.Errorf("annotating pod %s/%s after recording its phase: %w", pod.Namespace, pod.Name, err)
	}
	c.setNudged(pod.UID, stamp)
	c.terminations.WithLabelValues(string(MechanismPhase)).Inc()
	klog.FromContext(ctx).Info("Recorded pod phase from its main containers; the kubelet stops the sidecars",
		"phase", p.phase, "mains", p.summary, "sidecars", names(p.sidecars))
	c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonTerminatingSidecars, "Recorded phase %s: %s", p.phase, message)
	return nil
}

// createCRR asks kruise-daemon to stop the sidecars that have a container
// to stop. One request per pod, named after its UID: a second attempt, by
// this process or a new leader, finds it there.
func (c *Controller) createCRR(ctx context.Context, pod *corev1.Pod, p plan) error {
	var ctrs []appsv1alpha1.ContainerRecreateRequestContainer
	for _, sc := range p.sidecars {
		if st := containerStatus(pod, sc.name); st != nil && st.ContainerID != "" {
			ctrs = append(ctrs, appsv1alpha1.ContainerRecreateRequestContainer{Name: sc.name})
		}
	}
	if len(ctrs) == 0 {
		c.report(pod, corev1.EventTypeWarning, ReasonSidecarNotTerminated,
			fmt.Sprintf("Sidecars %s have not started, so kruise-daemon has nothing to stop", strings.Join(names(p.sidecars), ", ")))
		return nil
	}
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "sidecar-termination-" + string(pod.UID),
			Namespace: pod.Namespace,
			Labels:    map[string]string{LabelSidecarTermination: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    pod.Name,
			Containers: ctrs,
			Strategy: &appsv1alpha1.ContainerRecreateRequestStrategy{
				FailurePolicy: appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
				ForceRecreate: true,
			},
		},
	}
	_, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(pod.Namespace).Create(ctx, crr, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	c.terminations.WithLabelValues(string(MechanismCRR)).Inc()
	klog.FromContext(ctx).Info("Asked kruise-daemon to stop the sidecars", "crr", crr.Name, "mains", p.summary, "sidecars", names(p.sidecars))
	c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonTerminatingSidecars,
		"Main containers finished (%s); created ContainerRecreateRequest %s to stop sidecars %s", p.summary, crr.Name, strings.Join(names(p.sidecars), ", "))
	return nil
}

// replaceImages swaps each remaining sidecar's image for its _WITH_IMAGE,
// on a virtual-kubelet node (no kruise-daemon there; the provider restarts
// the container with the new image, which exits at once).
func (c *Controller) replaceImages(ctx context.Context, pod *corev1.Pod, p plan) error {
	var patch []map[string]string
	var replaced, without []string
	for _, sc := range p.sidecars {
		switch {
		case sc.image == "":
			without = append(without, sc.name)
		case specImage(pod, sc.name) != sc.image:
			patch = append(patch, map[string]string{"name": sc.name, "image": sc.image})
			replaced = append(replaced, sc.name+"="+sc.image)
		}
	}
	if len(without) > 0 {
		c.report(pod, corev1.EventTypeWarning, ReasonSidecarNotTerminated, fmt.Sprintf(
			"Node %s is a virtual-kubelet node (no kruise-daemon): sidecars %s cannot be stopped without a valid %s",
			pod.Spec.NodeName, strings.Join(without, ", "), EnvTerminateSidecarWithImage))
	}
	if len(patch) == 0 {
		return nil
	}
	body := map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"spec":     map[string]any{"containers": patch},
	}
	if err := c.patch(ctx, pod, body); err != nil {
		return fmt.Errorf("replacing sidecar images of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.terminations.WithLabelValues(mechanismImage).Inc()
	klog.FromContext(ctx).Info("Replaced sidecar images on a virtual-kubelet node", "node", pod.Spec.NodeName, "sidecars", replaced)
	c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonSidecarImageReplaced,
		"Main containers finished (%s); replaced sidecar images: %s", p.summary, strings.Join(replaced, ", "))
	return nil
}

// followUp watches the sidecars of a pod whose phase we recorded: one that
// ignored SIGTERM is killed at the end of the pod's grace period (exit
// 137), and one still running well after that is reported.
func (c *Controller) followUp(pod *corev1.Pod, p plan) (time.Duration, error) {
	now := c.clock.Now()
	if len(p.sidecars) > 0 {
		since := conditionTime(pod)
		grace := podGrace(pod)
		deadline := since.Add(grace + followUpSlack)
		if now.Before(deadline) {
			return requeueAfter(deadline.Sub(now))
		}
		if now.Sub(deadline) < recentExit {
			c.report(pod, corev1.EventTypeWarning, ReasonSidecarStillRunning, fmt.Sprintf(
				"Sidecars %s are still running more than %s after the pod's phase was recorded (grace period %s); the kubelet on %s has not stopped them",
				strings.Join(names(p.sidecars), ", "), grace+followUpSlack, grace, pod.Spec.NodeName))
		}
		return 0, nil
	}
	for _, sc := range p.containers.sidecars {
		st := containerStatus(pod, sc.name)
		if st == nil || st.State.Terminated == nil || st.State.Terminated.ExitCode != 137 {
			continue
		}
		if now.Sub(st.State.Terminated.FinishedAt.Time) > recentExit {
			continue
		}
		c.report(pod, corev1.EventTypeWarning, ReasonSidecarKilled, fmt.Sprintf(
			"Sidecar %s did not exit on SIGTERM and was killed at the end of the pod's grace period (exit code 137); the pod's phase stays %s as its main containers decided",
			sc.name, pod.Status.Phase))
	}
	return 0, nil
}

// maxGrace bounds a pod's grace period here: the API takes any int64 number
// of seconds, and followUpSlack added to one near the largest Duration would
// wrap round to a deadline in the past. 68 years is as good as for ever.
const maxGrace = math.MaxInt32 * time.Second

// podGrace is the pod's terminationGracePeriodSeconds (30 s when unset), at
// most maxGrace.
func podGrace(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return min(durations.Seconds(*g), maxGrace)
	}
	return 30 * time.Second
}

// statusRefused is a status write the API server refused for good
// (Forbidden, Invalid): retrying the same write will not help.
type statusRefused struct{ error }

func (e statusRefused) Unwrap() error { return e.error }

// patch applies a strategic-merge patch to the pod (or a subresource). The
// uid in each body makes a patch fail on a pod recreated under the same
// name.
func (c *Controller) patch(ctx context.Context, pod *corev1.Pod, body any, subresources ...string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, subresources...)
	return err
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func specImage(pod *corev1.Pod, name string) string {
	for _, ctr := range pod.Spec.Containers {
		if ctr.Name == name {
			return ctr.Image
		}
	}
	return ""
}

// conditionTime is when SidecarTerminated became True.
func conditionTime(pod *corev1.Pod) time.Time {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == ConditionSidecarTerminated {
			return cond.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
