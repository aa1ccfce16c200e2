package sidecarset

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// A HotUpgrade sidecar X runs as, one working, the other idle on the empty image. Its
// upgrade is OpenKruise's, in two writes:
//  1. upgrade (planUpgrade): the new image goes onto the idle copy, which becomes the working
//     one in the annotation at once; the versions say both run (the new copy's alternate is the
//     old one's version, and the other way round). The app's two copies hand over meanwhile.
//  2. flip (planFlip), once that write is applied and every container but the old copy is
//     ready: the old copy goes to the empty image and its version to "0".
// Between the two the pod counts as not ready, which holds back the next pods by
// maxUnavailable; a new image that never becomes ready stops the pod at step 1.

// hotSidecars are ss's HotUpgrade containers.
func hotSidecars(ss *appsv1beta1.SidecarSet) []*appsv1beta1.SidecarContainer {
	var out []*appsv1beta1.SidecarContainer
	for i := range ss.Spec.Containers {
		if sidecarrules.IsHotUpgrade(&ss.Spec.Containers[i]) {
			out = append(out, &ss.Spec.Containers[i])
		}
	}
	return out
}

// handingOver names the old copies of ss's HotUpgrade sidecars that still run something else
// than the empty image on pod: the copies step 2 puts to rest. None: no hand-over is running.
func handingOver(ss *appsv1beta1.SidecarSet, pod *corev1.Pod) ([]string, error) {
	hot := hotSidecars(ss)
	if len(hot) == 0 {
		return nil, nil
	}
	working, err := sidecarrules.WorkingCopies(pod)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sc := range hot {
		_, idle := sidecarrules.WorkingAndIdle(working, sc.Name)
		if c := findContainer(pod.Spec.Containers, idle); c != nil && c.Image != sc.UpgradeStrategy.HotUpgradeEmptyImage {
			out = append(out, idle)
		}
	}
	return out, nil
}

// readyToFlip: the upgrade written on pod by ss is applied (state done) and every container but
// the old copies is ready, so the new copies have taken over. A Running and Ready pod is.
func readyToFlip(pod *corev1.Pod, state *pub.InPlaceUpdateState, old []string) bool {
	if done, _ := inplace.StateDone(pod, state); !done {
		return false
	}
	if pod.Status.Phase == corev1.PodRunning && podReady(pod) {
		return true
	}
	for _, st := range pod.Status.ContainerStatuses {
		if !slices.Contains(old, st.Name) && !st.Ready {
			return false
		}
	}
	return true
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hotTarget picks which copy of sc gets the new image on pod, as OpenKruise does: a copy on the
// empty image; else the one not ready (or not done restarting) when the other is (a failed new
// image is replaced, the working old one kept); else the one not working.
func hotTarget(sc *appsv1beta1.SidecarContainer, pod *corev1.Pod, working map[string]string, state *pub.InPlaceUpdateState) (target, other string) {
	one, two := sidecarrules.HotUpgradeCopies(sc.Name)
	empty := sc.UpgradeStrategy.HotUpgradeEmptyImage
	if c := findContainer(pod.Spec.Containers, one); c != nil && c.Image == empty {
		return one, two
	}
	if c := findContainer(pod.Spec.Containers, two); c != nil && c.Image == empty {
		return two, one
	}
	oneOK, twoOK := copyReady(pod, one, state), copyReady(pod, two, state)
	switch {
	case oneOK && !twoOK:
		return two, one
	case !oneOK && twoOK:
		return one, two
	}
	w, idle := sidecarrules.WorkingAndIdle(working, sc.Name)
	return idle, w
}

// copyReady: the container is ready and, if the last upgrade touched it, runs what it set.
func copyReady(pod *corev1.Pod, name string, state *pub.InPlaceUpdateState) bool {
	st := containerStatus(pod, name)
	if st == nil || !st.Ready {
		return false
	}
	if state == nil {
		return true
	}
	last, ok := state.LastContainerStatuses[name]
	if !ok {
		return true
	}
	done, _ := inplace.StateDone(pod, &pub.InPlaceUpdateState{LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{name: last}})
	return done
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// hotUpgradeStep is step 1 for sc on pod: the copy to restart, the image it gets and the
// annotations to write; no target when nothing is to change. working is updated.
//
// When the other copy runs sc's image already, there is nothing to start, except after a
// failed hand-over rolled back (the image set back to the one the old copy still runs): the
// failed copy, working by the annotation but not ready, goes back to the empty image and the
// old copy is working again, so the pod is as before the failed upgrade. OpenKruise leaves such
// a pod handing over to the failed copy for good.
func hotUpgradeStep(ss *appsv1beta1.SidecarSet, sc *appsv1beta1.SidecarContainer, pod *corev1.Pod,
	working map[string]string, state *pub.InPlaceUpdateState, annotations map[string]string) (string, string, error) {
	target, other := hotTarget(sc, pod, working, state)
	tc, oc := findContainer(pod.Spec.Containers, target), findContainer(pod.Spec.Containers, other)
	if tc == nil || oc == nil {
		return "", "", fmt.Errorf("pod %s/%s lacks %s or %s, the copies of HotUpgrade sidecar %s of SidecarSet %s",
			pod.Namespace, pod.Name, target, other, sc.Name, ss.Name)
	}
	empty := sc.UpgradeStrategy.HotUpgradeEmptyImage
	if oc.Image == sc.Image {
		if tc.Image == empty || copyReady(pod, target, state) {
			return "", "", nil
		}
		working[sc.Name] = other
		annotations[sidecarrules.VersionAnnotation(target)] = emptyVersion
		annotations[sidecarrules.VersionAltAnnotation(other)] = emptyVersion
		return target, empty, nil
	}
	working[sc.Name] = target
	annotations[sidecarrules.VersionAnnotation(target)] = ss.ResourceVersion
	annotations[sidecarrules.VersionAltAnnotation(target)] = pod.Annotations[sidecarrules.VersionAnnotation(other)]
	annotations[sidecarrules.VersionAltAnnotation(other)] = ss.ResourceVersion
	return target, sc.Image, nil
}

// emptyVersion is the version of a copy on the empty image, and the alternate version of a copy
// with no peer.
const emptyVersion = "0"

// planFlip computes step 2 on pod: the old copies (handingOver) to the empty image, their version
// "0" and the working copies' alternate "0", and the old copies added to the SidecarSet's upgrade
// state so that the pod counts as upgrading until they run the empty image.
func planFlip(ss *appsv1beta1.SidecarSet, pod *corev1.Pod, old []string) ([]byte, error) {
	working, err := sidecarrules.WorkingCopies(pod)
	if err != nil {
		return nil, err
	}
	var patch upgradePatch
	annotations := map[string]string{}
	for _, sc := range hotSidecars(ss) {
		w, idle := sidecarrules.WorkingAndIdle(working, sc.Name)
		if !slices.Contains(old, idle) {
			continue
		}
		patch.Spec.Containers = append(patch.Spec.Containers, imageOnly{Name: idle, Image: sc.UpgradeStrategy.HotUpgradeEmptyImage})
		annotations[sidecarrules.VersionAnnotation(idle)] = emptyVersion
		annotations[sidecarrules.VersionAltAnnotation(w)] = emptyVersion
	}
	states, err := sidecarrules.UpgradeStates(pod)
	if err != nil {
		return nil, err
	}
	state := states[ss.Name]
	if state == nil {
		state = &pub.InPlaceUpdateState{}
	}
	if state.LastContainerStatuses == nil {
		state.LastContainerStatuses = map[string]pub.InPlaceUpdateContainerStatus{}
	}
	for name, st := range inplace.LastStatuses(pod, old) {
		state.LastContainerStatuses[name] = st
	}
	states[ss.Name] = state
	raw, err := json.Marshal(states)
	if err != nil {
		return nil, fmt.Errorf("encoding annotation %s: %w", sidecarrules.InPlaceUpdateStateAnnotation, err)
	}
	annotations[sidecarrules.InPlaceUpdateStateAnnotation] = string(raw)
	patch.Metadata = patchMeta{ResourceVersion: pod.ResourceVersion, Annotations: annotations}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encoding the hot-upgrade flip of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return data, nil
}

// hotUpgradeBlocked says why the new copy of a pod handing over does not come up, when the
// kubelet reports a reason beyond starting (a pull error, a crash loop); "" otherwise.
func hotUpgradeBlocked(ss *appsv1beta1.SidecarSet, pod *corev1.Pod) string {
	working, err := sidecarrules.WorkingCopies(pod)
	if err != nil {
		return ""
	}
	for _, sc := range hotSidecars(ss) {
		w, _ := sidecarrules.WorkingAndIdle(working, sc.Name)
		st := containerStatus(pod, w)
		if st == nil || st.Ready {
			continue
		}
		if st.State.Waiting != nil {
			switch st.State.Waiting.Reason {
			case "", "ContainerCreating", "PodInitializing":
				continue
			}
			return fmt.Sprintf("container %s (%s): %s", w, sc.Image, st.State.Waiting.Reason)
		}
		if st.RestartCount > 0 && st.State.Running == nil {
			return fmt.Sprintf("container %s (%s): restarting", w, sc.Image)
		}
	}
	return ""
}
