package crradmit

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What makes a pod unfit for a request, for good: the request can never be
// carried out whatever happens next. Admission (this controller, and the
// validating webhook at create time) refuses such a request with the same
// words, so that a user sees one message whichever answers first.
const (
	// UnfitPodTerminating: the pod is being deleted.
	UnfitPodTerminating = "PodTerminating"
	// UnfitPodFinished: the pod has succeeded or failed; its containers
	// will not run again.
	UnfitPodFinished = "PodFinished"
	// UnfitContainerNotFound: the request names a container that is not
	// one of the pod's spec.containers.
	UnfitContainerNotFound = "ContainerNotFound"
)

// Unfit is why a request cannot be carried out in its pod.
type Unfit struct {
	// Kind is one of the Unfit* constants.
	Kind string
	// Message is the request's message.
	Message string
	// PerContainer holds, for UnfitContainerNotFound, a message per
	// container the pod lacks.
	PerContainer map[string]string
}

// PodNotFoundMessage is the message of a request whose pod does not exist.
func PodNotFoundMessage(pod string) string { return fmt.Sprintf("pod %q not found", pod) }

// CheckPod says why a request for containers (by name) can never be carried
// out in pod as it is now; nil when nothing rules it out. Only regular
// containers (spec.containers) can be recreated, as in OpenKruise, whose
// admission finds no container status for an init container: an init
// container, a native sidecar (restartPolicy Always) included, is not found,
// and its message says why.
func CheckPod(pod *corev1.Pod, containers []string) *Unfit {
	switch {
	case pod.DeletionTimestamp != nil:
		return &Unfit{Kind: UnfitPodTerminating, Message: fmt.Sprintf("pod %q is being deleted", pod.Name)}
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return &Unfit{Kind: UnfitPodFinished,
			Message: fmt.Sprintf("pod %q has finished (phase %q): its containers will not run again", pod.Name, pod.Status.Phase)}
	}
	var unknown []string
	per := map[string]string{}
	for _, name := range containers {
		if slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }) {
			continue
		}
		unknown = append(unknown, name)
		per[name] = fmt.Sprintf("container %q not found in pod %q", name, pod.Name)
		if i := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			kind := "an init container"
			if p := pod.Spec.InitContainers[i].RestartPolicy; p != nil && *p == corev1.ContainerRestartPolicyAlways {
				kind = "a native sidecar (an init container with restartPolicy Always)"
			}
			per[name] += fmt.Sprintf(": it is %s, and only spec.containers can be recreated", kind)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return &Unfit{
		Kind:         UnfitContainerNotFound,
		Message:      fmt.Sprintf("containers not found in pod %q: %s", pod.Name, strings.Join(unknown, ", ")),
		PerContainer: per,
	}
}
