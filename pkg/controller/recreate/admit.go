package recreate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// out is completed at once; otherwise one patch writes the routing labels
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

	// One JSON patch writes only what admission adds. An update would send
	// the whole object encoded from Go, which cannot tell an empty list from
	// an absent one: a creator's "ports: []" or "exec: {command: []}" (valid,
	// as in OpenKruise) would be dropped, and the rule that such fields never
	// change would refuse that. The patch first sets the resourceVersion
	// read: the API server applies the patch to the object it holds, then
	// refuses the result with a conflict if that has changed since.
	patch := jsonPatch{{Op: "replace", Path: "/metadata/resourceVersion", Value: crr.ResourceVersion}}
	if needsUnready(crr) && readinessgate.Declared(pod) {
		// Not-ready before the daemon can see the request; the annotation
		// tells it when the unready period it waits out began.
		since, err := c.markUnready(ctx, crr, pod)
		if err != nil {
			return err
		}
		patch.setEntries("/metadata/annotations", crr.Annotations, map[string]string{
			appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: since.UTC().Format(time.RFC3339),
		})
	}
	patch.setEntries("/metadata/labels", crr.Labels, map[string]string{
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: pod.Spec.NodeName,
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	})
	// The containers' names and order never change (a rule of the CRD), so
	// an index read here still names the same container on the server.
	for i := range crr.Spec.Containers {
		ctr := &crr.Spec.Containers[i]
		patch = append(patch, fillContainer(fmt.Sprintf("/spec/containers/%d", i), ctr, pod, statuses[ctr.Name])...)
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the admission patch of CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	if _, err := c.kruiseClient.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.JSONPatchType, body, metav1.PatchOptions{}); err != nil {
		if apierrors.IsInvalid(err) {
			// Retrying the same patch cannot help: the server's validation
			// refuses what admission writes (a node name too long for a
			// label value, say). The server also answers Invalid when the
			// patch does not apply to the object as it is now, which can
			// only differ from what was read if it changed since; then the
			// completion below carries the resourceVersion read, fails with
			// a conflict, and the request is decided again.
			return c.reject(ctx, crr, fmt.Sprintf("the API server refused to admit the request: %v", err), nil)
		}
		return fmt.Errorf("admitting CRR %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Admitted CRR", "node", pod.Spec.NodeName, "podUID", pod.UID)
	c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonAdmitted, "Admitted for pod %s (uid %s) on node %s", pod.Name, pod.UID, pod.Spec.NodeName)
	return nil
}

// admitted reports whether admit has written the CRR. Admission sets both
// routing labels and every container's statusContext in one patch; a
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

// fillContainer returns the JSON patch operations that fill in, for the
// container at path (read as ctr), the fields still absent (each may be set
// only once): its current instance, and its preStop hook and ports copied
// from the pod. A field the creator gave is kept as given, even as an empty
// list: "ports: []" says the container has none, and decodes to an empty
// slice where an absent field is nil.
func fillContainer(path string, ctr *appsv1alpha1.ContainerRecreateRequestContainer, pod *corev1.Pod, st *corev1.ContainerStatus) jsonPatch {
	var patch jsonPatch
	if ctr.StatusContext == nil {
		patch.add(path+"/statusContext", &appsv1alpha1.ContainerRecreateRequestContainerContext{
			ContainerID:  st.ContainerID,
			RestartCount: st.RestartCount,
		})
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(pc corev1.Container) bool { return pc.Name == ctr.Name })
	spec := &pod.Spec.Containers[i]
	if ctr.PreStop == nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
		if h := preStopHandler(spec.Lifecycle.PreStop); h != nil {
			patch.add(path+"/preStop", h)
		}
	}
	if ctr.Ports == nil && len(spec.Ports) > 0 {
		patch.add(path+"/ports", spec.Ports)
	}
	return patch
}

// jsonPatch is an RFC 6902 JSON patch.
type jsonPatch []jsonPatchOp

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func (p *jsonPatch) add(path string, value any) {
	*p = append(*p, jsonPatchOp{Op: "add", Path: path, Value: value})
}

// setEntries adds to p the operations that put entries into the string map
// at path, read as cur: the whole map when cur is empty (the object may have
// no map there), else each entry cur does not already hold.
func (p *jsonPatch) setEntries(path string, cur, entries map[string]string) {
	if len(cur) == 0 {
		if len(entries) > 0 {
			p.add(path, entries)
		}
		return
	}
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		if v, ok := cur[k]; !ok || v != entries[k] {
			p.add(path+"/"+pointerEscaper.Replace(k), entries[k])
		}
	}
}

// pointerEscaper escapes a map key as a JSON pointer (RFC 6901) token: a
// label key such as "crr.apps.kruise.io/pod-uid" holds a "/".
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

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
