package inplace

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// containersDone reports whether the containers the update has touched so far run as asked, by
// the pod's status; waiting says what is still awaited when they do not.
//
// A container given a new image or restarted for changed metadata is done once its status names
// a container other than the one recorded when its batch was applied: the kubelet starts a new
// container only from the current spec, so that proves the new image even when its image ID is
// unchanged (a retag). States written without container IDs (by OpenKruise) fall back to image
// IDs: a new one proves a new image; the same one only when the status reports the image the
// spec asks for. A resized container is done once the resources the kubelet reports equal its
// spec's (a container without cpu or memory resources may report none).
func containersDone(pod *corev1.Pod, state *pub.InPlaceUpdateState) (bool, string) {
	for _, name := range sortedKeys(state.LastContainerStatuses) {
		last := state.LastContainerStatuses[name]
		st := containerStatusOf(pod, name)
		if st == nil {
			return false, fmt.Sprintf("container %s has no status yet", name)
		}
		if !restarted(containerOf(pod, name), last, st) {
			return false, fmt.Sprintf("container %s has not been restarted yet", name)
		}
	}
	if !state.UpdateResources {
		return true, ""
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st := containerStatusOf(pod, c.Name)
		if st == nil || (st.Resources == nil && !sameQoSResources(c.Resources, corev1.ResourceRequirements{})) {
			return false, fmt.Sprintf("container %s reports no resources yet", c.Name)
		}
		if st.Resources != nil && !sameQoSResources(c.Resources, *st.Resources) {
			return false, resizeWaiting(pod, c.Name)
		}
	}
	return true, ""
}

// restarted reports whether st is the status of a container started after last was recorded.
func restarted(spec *corev1.Container, last pub.InPlaceUpdateContainerStatus, st *corev1.ContainerStatus) bool {
	if last.ContainerID != "" {
		return st.ContainerID != "" && st.ContainerID != last.ContainerID
	}
	if st.ImageID != last.ImageID {
		return st.ImageID != ""
	}
	return spec != nil && sameImage(st.Image, spec.Image)
}

// sameImage compares image references, an untagged name meaning its latest tag.
func sameImage(a, b string) bool { return withTag(a) == withTag(b) }

func withTag(ref string) string {
	for i := len(ref) - 1; i >= 0; i-- {
		switch ref[i] {
		case ':', '@':
			return ref
		case '/':
			return ref + ":latest"
		}
	}
	return ref + ":latest"
}

// sameQoSResources compares the cpu and memory requests and limits of two requirements; the
// kubelet reports no other resource.
func sameQoSResources(a, b corev1.ResourceRequirements) bool {
	for _, name := range qosResources {
		if resourceChanges(a, b, name) {
			return false
		}
	}
	return true
}

// resizeWaiting says why a container's resize has not been applied, with the API server's
// reason when it has given one (condition PodResizePending: Deferred or Infeasible).
func resizeWaiting(pod *corev1.Pod, name string) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue {
			return fmt.Sprintf("container %s: resize pending (%s: %s)", name, c.Reason, c.Message)
		}
	}
	return fmt.Sprintf("container %s: resize not applied yet", name)
}

// notReady names the first of containers that is not ready, or returns "".
func notReady(pod *corev1.Pod, containers []string) string {
	for _, name := range containers {
		st := containerStatusOf(pod, name)
		if st == nil || !st.Ready {
			return name
		}
	}
	return ""
}

// kubeletRestarting reports whether the gate of a pod whose last batch is not done yet can be
// released: the update only replaces images, every container it touches has a status, and the
// kubelet has begun a sync of the spec that asks for the new images (status.observedGeneration,
// Kubernetes ≥ 1.34), which stops the old containers and starts the new ones.
//
// Why release early: the kubelet computes Ready from the readiness gates as it read them at its
// last sync of the pod. A gate set True only once the new containers run is read by the sync
// after that, which waits for the runtime's next relist (1 to 2 s), and the pod turns Ready that
// much later than its probes allow. Released while the kubelet is still replacing the
// containers, the gate is in the sync that reports them, and the pod turns Ready with their first
// passing probe, as a bare pod does after an image change.
//
// Why it is safe: the sync of the new spec read the gate False before it was released, and the
// kubelet syncs the pod again only after that sync has stopped the old containers; Ready,
// computed from the gate the kubelet last read, cannot turn True in between. Should that sync
// fail before stopping them (the runtime refusing to stop a container, say), the next one could
// report the pod Ready on an old container: Decide then takes the gate back (ActionHoldGate).
// Updates that restart through the node daemon (env from metadata) or resize leave the spec's
// generation unchanged or the containers running, and keep the gate until they are done.
func kubeletRestarting(pod *corev1.Pod, state *pub.InPlaceUpdateState) bool {
	if !state.UpdateImages || state.UpdateEnvFromMetadata || state.UpdateResources || hasNext(state) {
		return false
	}
	if pod.Generation == 0 || pod.Status.ObservedGeneration < pod.Generation {
		return false
	}
	for name := range state.LastContainerStatuses {
		if containerStatusOf(pod, name) == nil {
			return false
		}
	}
	return len(state.LastContainerStatuses) > 0
}

// readyOnOldContainer reports whether the pod is Ready while a container its update touches
// still runs as the one recorded before the update.
func readyOnOldContainer(pod *corev1.Pod, state *pub.InPlaceUpdateState) bool {
	if ready := podCondition(pod, corev1.PodReady); ready == nil || ready.Status != corev1.ConditionTrue {
		return false
	}
	for name, last := range state.LastContainerStatuses {
		if st := containerStatusOf(pod, name); st != nil && !restarted(containerOf(pod, name), last, st) {
			return true
		}
	}
	return false
}
