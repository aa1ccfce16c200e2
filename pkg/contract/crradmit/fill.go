package crradmit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// What admission writes into a request's metadata and spec, from its pod
// alone: the routing labels and, per container, statusContext, preStop and
// ports. The CRR mutating webhook (pkg/webhook/crrfill) writes it at create,
// so that the create response carries it as OpenKruise's does; this
// controller writes whatever is still missing when it admits the request
// (the webhook off, failed open, or the pod not running yet at create). Both
// compute the same values here, and the controller keeps the webhook's:
// ForeignFields is how it tells them from values of anyone else.

// RoutingLabels are the labels admission sets for pod.
func RoutingLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: pod.Spec.NodeName,
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}
}

// FillPatch is the JSON patch (RFC 6902) that fills a new request in from its
// pod, as admission would: the routing labels, and each container's
// statusContext, preStop and ports. ok is false when the pod cannot be
// admitted now (it is refused, or still starting): then the controller
// decides the request later, as without the webhook. crr must carry none of
// the per-container fields (see CreatorSetFields).
func FillPatch(crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) (patch []byte, ok bool, err error) {
	v := Assess(crr, pod)
	if v.Statuses == nil {
		return nil, false, nil
	}
	var p Patch
	p.SetEntries("/metadata/labels", crr.Labels, RoutingLabels(pod))
	for i := range crr.Spec.Containers {
		ctr := &crr.Spec.Containers[i]
		p = append(p, FillContainer(fmt.Sprintf("/spec/containers/%d", i), ctr, pod, v.Statuses[ctr.Name])...)
	}
	out, err := json.Marshal(p)
	if err != nil {
		return nil, false, fmt.Errorf("encoding the fill-in of CRR %s: %w", crr.Name, err)
	}
	return out, true, nil
}

// FillContainer returns the JSON patch operations that fill in, for the
// container at path (read as ctr), what it lacks of: its current instance,
// and its preStop hook and ports copied from the pod. The daemon runs the
// pod's own hook, never this copy; the copy is there for compatibility with
// OpenKruise's tooling.
func FillContainer(path string, ctr *appsv1alpha1.ContainerRecreateRequestContainer, pod *corev1.Pod, st *corev1.ContainerStatus) Patch {
	var patch Patch
	if ctr.StatusContext == nil {
		patch.Add(path+"/statusContext", statusContext(st))
	}
	spec := podContainer(pod, ctr.Name)
	if h := preStopOf(spec); h != nil && ctr.PreStop == nil {
		patch.Add(path+"/preStop", h)
	}
	if ports := portsToCopy(spec); len(ports) > 0 && ctr.Ports == nil {
		patch.Add(path+"/ports", ports)
	}
	return patch
}

func statusContext(st *corev1.ContainerStatus) *appsv1alpha1.ContainerRecreateRequestContainerContext {
	return &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: st.ContainerID, RestartCount: st.RestartCount}
}

// podContainer is the pod's spec.containers entry of that name (CheckPod
// has made sure there is one).
func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	i := slices.IndexFunc(pod.Spec.Containers, func(pc corev1.Container) bool { return pc.Name == name })
	return &pod.Spec.Containers[i]
}

// preStopOf is the copy of the container's preStop hook admission writes;
// nil when it writes none.
func preStopOf(spec *corev1.Container) *appsv1alpha1.ProbeHandler {
	if spec.Lifecycle == nil || spec.Lifecycle.PreStop == nil {
		return nil
	}
	return preStopHandler(spec.Lifecycle.PreStop)
}

// ForeignFields lists "<container>.<field>" for every per-container field the
// request carries that admission would not have written for pod as judged in
// v: a value the webhook wrote at create is exactly admission's (the pod's
// hook and ports never change), and its statusContext names the instance
// that ran when the request was created (the one running now, or the one
// that ended since). Anything else is someone else's: a hook of their
// choosing, or a statusContext copied from another request, naming an
// instance long gone, which would "succeed" with nothing recreated. When the
// pod cannot be admitted now, nothing set can be admission's: the webhook
// fills a request in only for a pod it could admit, and a pod never goes
// back to starting.
func ForeignFields(crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, v Verdict) []string {
	if v.Statuses == nil {
		return CreatorSetFields(crr)
	}
	var foreign []string
	for _, ctr := range crr.Spec.Containers {
		spec := podContainer(pod, ctr.Name)
		if ctr.PreStop != nil && !reflect.DeepEqual(ctr.PreStop, preStopOf(spec)) {
			foreign = append(foreign, ctr.Name+".preStop")
		}
		// Strict: an empty list is never admission's (it writes ports only
		// when there are some).
		if ctr.Ports != nil && (len(ctr.Ports) == 0 || !reflect.DeepEqual(ctr.Ports, portsToCopy(spec))) {
			foreign = append(foreign, ctr.Name+".ports")
		}
		if ctr.StatusContext != nil && !ranAtCreation(*ctr.StatusContext, v.Statuses[ctr.Name], crr) {
			foreign = append(foreign, ctr.Name+".statusContext")
		}
	}
	return foreign
}

// ranAtCreation reports whether sc names the container's current instance,
// or the one before it if that ended no earlier than the request's creation
// (it restarted between the webhook and this controller; as in OpenKruise,
// the request then counts that restart as the recreation).
func ranAtCreation(sc appsv1alpha1.ContainerRecreateRequestContainerContext, st *corev1.ContainerStatus, crr *appsv1alpha1.ContainerRecreateRequest) bool {
	if sc == *statusContext(st) {
		return true
	}
	last := st.LastTerminationState.Terminated
	return last != nil && last.ContainerID == sc.ContainerID && sc.RestartCount == st.RestartCount-1 &&
		!last.FinishedAt.Before(&crr.CreationTimestamp)
}
