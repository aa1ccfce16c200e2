package recreate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/readinessgate"
)

// Event reasons recorded on CRRs.
const (
	ReasonAdmitted         = "Admitted"
	ReasonInvalidRequest   = "InvalidRequest"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonPodGone          = "PodGone"
	ReasonPodReplaced      = "PodReplaced"
	ReasonNoLiveDaemon     = "NoLiveDaemon"
)

// admit checks a new CRR against its pod. A request that cannot be carried
// out is completed at once; otherwise one Update writes the routing labels
// and, per container, the context the daemon needs.
//
// The pod is read from the API server, not the cache: admission happens once
// per request, and a pod that has just started would look not running (or
// missing) in a cache that lags.
func (c *Controller) admit(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) error {
	pod, err := c.getLivePod(ctx, crr.Namespace, crr.Spec.PodName)
	if apierrors.IsNotFound(err) {
		return c.reject(ctx, crr, fmt.Sprintf("pod %q not found", crr.Spec.PodName), nil)
	}
	if err != nil {
		return err
	}
	switch {
	case pod.DeletionTimestamp != nil:
		return c.reject(ctx, crr, fmt.Sprintf("pod %q is being deleted", pod.Name), nil)
	case pod.Spec.NodeName == "":
		return c.reject(ctx, crr, fmt.Sprintf("pod %q is not scheduled to a node", pod.Name), nil)
	case pod.Status.Phase != corev1.PodRunning:
		return c.reject(ctx, crr, fmt.Sprintf("pod %q is not running (phase %q)", pod.Name, pod.Status.Phase), nil)
	}

	statuses := make(map[string]*corev1.ContainerStatus, len(pod.Status.ContainerStatuses))
	for i := range pod.Status.ContainerStatuses {
		statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
	}
	var unknown, notStarted, foreign []string
	bad := map[string]string{}
	for _, want := range crr.Spec.Containers {
		switch st := statuses[want.Name]; {
		case !slices.ContainsFunc(pod.Spec.Containers, func(pc corev1.Container) bool { return pc.Name == want.Name }):
			unknown = append(unknown, want.Name)
			bad[want.Name] = fmt.Sprintf("container %q not found in pod %q", want.Name, pod.Name)
		case st == nil || st.ContainerID == "":
			notStarted = append(notStarted, want.Name)
			bad[want.Name] = fmt.Sprintf("container %q has no containerID in the status of pod %q", want.Name, pod.Name)
		case !pastOrCurrent(want.StatusContext, st):
			foreign = append(foreign, want.Name)
			bad[want.Name] = fmt.Sprintf("statusContext of container %q (containerID %q, restartCount %d) names no instance it has had: it runs %q with restartCount %d",
				want.Name, want.StatusContext.ContainerID, want.StatusContext.RestartCount, st.ContainerID, st.RestartCount)
		}
	}
	if len(bad) > 0 {
		var parts []string
		if len(unknown) > 0 {
			parts = append(parts, fmt.Sprintf("containers not found in pod %q: %s", pod.Name, strings.Join(unknown, ", ")))
		}
		if len(notStarted) > 0 {
			parts = append(parts, fmt.Sprintf("containers without a containerID in pod %q: %s", pod.Name, strings.Join(notStarted, ", ")))
		}
		if len(foreign) > 0 {
			parts = append(parts, fmt.Sprintf("containers whose statusContext names no instance of theirs in pod %q (leave statusContext out: kruise fills it in): %s",
				pod.Name, strings.Join(foreign, ", ")))
		}
		return c.reject(ctx, crr, strings.Join(parts, "; "), bad)
	}

	upd := crr.DeepCopy()
	if needsUnready(crr) && readinessgate.Declared(pod) {
		// Not-ready before the daemon can see the request; the annotation
		// tells it when the unready period it waits out began.
		since, err := c.markUnready(ctx, crr, pod)
		if err != nil {
			return err
		}
		if upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		upd.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] = since.UTC().Format(time.RFC3339)
	}
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey] = pod.Spec.NodeName
	upd.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] = string(pod.UID)
	upd.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey] = "true"
	for i := range upd.Spec.Containers {
		fillContainer(&upd.Spec.Containers[i], pod, statuses[upd.Spec.Containers[i].Name])
	}
	if _, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsInvalid(err) {
			// Retrying the same update cannot help. It happens when the
			// creator wrote a field as an empty list (preStop.exec.command: [],
			// ports: []): decoded into Go it reads as absent, the update drops
			// it, and the rule that such fields never change refuses that.
			return c.reject(ctx, crr, fmt.Sprintf("the API server refused to admit the request (leave out fields given as empty lists): %v", err), nil)
		}
		return fmt.Errorf("admitting CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Admitted CRR", "node", pod.Spec.NodeName, "podUID", pod.UID)
	c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonAdmitted, "Admitted for pod %s (uid %s) on node %s", pod.Name, pod.UID, pod.Spec.NodeName)
	return nil
}

// admitted reports whether admit has written the CRR. Admission sets both
// routing labels and every container's statusContext in one update; a
// creator may have set the labels itself (a CRR copied from another, or
// garbage), and without the rest they are not ours: admission overwrites
// them. Going by the pod-uid label alone would skip admission and end the
// request as "pod was replaced", or leave it unrouted to any daemon.
func admitted(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	if crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] == "" || crr.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey] == "" {
		return false
	}
	for _, ctr := range crr.Spec.Containers {
		if ctr.StatusContext == nil {
			return false
		}
	}
	return true
}

// pastOrCurrent reports whether a statusContext given by the request's
// creator can name the current instance of the container or an earlier one.
// It is kept as given (it may be set only once), and the daemon counts a
// container whose instance differs from it as already recreated: one with a
// containerID that is not the current one but a restart count no lower than
// the current one names no instance the pod has had (a copy from another pod,
// or garbage), and would "succeed" without anything being recreated.
func pastOrCurrent(sc *appsv1alpha1.ContainerRecreateRequestContainerContext, st *corev1.ContainerStatus) bool {
	return sc == nil || sc.ContainerID == st.ContainerID || sc.RestartCount < st.RestartCount
}

// fillContainer copies, into the fields still empty (each may be set only
// once), the container's current instance and its preStop hook and ports.
func fillContainer(dst *appsv1alpha1.ContainerRecreateRequestContainer, pod *corev1.Pod, st *corev1.ContainerStatus) {
	if dst.StatusContext == nil {
		dst.StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{
			ContainerID:  st.ContainerID,
			RestartCount: st.RestartCount,
		}
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(pc corev1.Container) bool { return pc.Name == dst.Name })
	spec := &pod.Spec.Containers[i]
	if dst.PreStop == nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
		dst.PreStop = preStopHandler(spec.Lifecycle.PreStop)
	}
	if len(dst.Ports) == 0 && len(spec.Ports) > 0 {
		dst.Ports = slices.Clone(spec.Ports)
	}
}

// preStopHandler converts a pod's preStop hook. A sleep hook has no field in
// the (OpenKruise-compatible) ProbeHandler and is left out; nil when nothing
// is left.
func preStopHandler(h *corev1.LifecycleHandler) *appsv1alpha1.ProbeHandler {
	if h.Exec == nil && h.HTTPGet == nil && h.TCPSocket == nil {
		return nil
	}
	return &appsv1alpha1.ProbeHandler{
		Exec:      h.Exec.DeepCopy(),
		HTTPGet:   h.HTTPGet.DeepCopy(),
		TCPSocket: h.TCPSocket.DeepCopy(),
	}
}

// reject completes a CRR that cannot be carried out. perContainer holds a
// message for the containers at fault; the others get message.
func (c *Controller) reject(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, message string, perContainer map[string]string) error {
	if err := c.complete(ctx, crr, message, perContainer); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Rejected CRR", "reason", message)
	c.recorder.Event(crr, corev1.EventTypeWarning, ReasonInvalidRequest, message)
	return nil
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
