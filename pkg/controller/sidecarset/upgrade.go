package sidecarset

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// upgradePatch is one pod's in-place sidecar upgrade as a strategic-merge patch: the new images
// of the SidecarSet's containers and native sidecar init containers the pod has (merged by
// name), the two hash annotations, and the SidecarSet's entry of the upgrade-state annotation.
// The pod's resourceVersion is the patch's precondition: a pod read from a stale cache fails
// with a conflict instead of recording the wrong containers to wait for.
type upgradePatch struct {
	Metadata patchMeta `json:"metadata"`
	Spec     patchSpec `json:"spec,omitempty"`
}

type patchMeta struct {
	ResourceVersion string            `json:"resourceVersion"`
	Annotations     map[string]string `json:"annotations"`
}

type patchSpec struct {
	Containers     []imageOnly `json:"containers,omitempty"`
	InitContainers []imageOnly `json:"initContainers,omitempty"`
}

type imageOnly struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// planUpgrade computes the patch that upgrades pod to ss (hashes h, revision rev) at now, and
// the containers it restarts. A HotUpgrade sidecar's new image goes onto one of its copies
// (hotUpgradeStep). resize, when it resizes containers, are the sidecars' resizes, written
// through the resize subresource before the patch: the state then waits for them too. pod is
// not changed.
func planUpgrade(ss *appsv1beta1.SidecarSet, h hashes, rev string, pod *corev1.Pod, resize *inplace.Spec, now time.Time) ([]byte, []string, error) {
	var patch upgradePatch
	var restarted, sidecars []string
	states, err := sidecarrules.UpgradeStates(pod)
	if err != nil {
		return nil, nil, err
	}
	working, err := sidecarrules.WorkingCopies(pod)
	if err != nil {
		return nil, nil, err
	}
	hotAnnotations := map[string]string{}
	for _, sc := range ss.Spec.Containers {
		if sidecarrules.IsHotUpgrade(&sc) {
			sidecars = append(sidecars, sc.Name)
			target, image, err := hotUpgradeStep(ss, &sc, pod, working, states[ss.Name], hotAnnotations)
			if err != nil {
				return nil, nil, err
			}
			// A target running the image already (the SidecarSet set back to the old copy's
			// image before the flip) only takes over the work: a restart would never come.
			if target != "" && findContainer(pod.Spec.Containers, target).Image != image {
				patch.Spec.Containers = append(patch.Spec.Containers, imageOnly{Name: target, Image: image})
				restarted = append(restarted, target)
			}
			continue
		}
		c := findContainer(pod.Spec.Containers, sc.Name)
		if c == nil {
			return nil, nil, fmt.Errorf("pod %s/%s has no container %s of SidecarSet %s to upgrade", pod.Namespace, pod.Name, sc.Name, ss.Name)
		}
		sidecars = append(sidecars, sc.Name)
		if c.Image != sc.Image {
			patch.Spec.Containers = append(patch.Spec.Containers, imageOnly{Name: sc.Name, Image: sc.Image})
			restarted = append(restarted, sc.Name)
		}
	}
	for _, sc := range ss.Spec.InitContainers {
		if !sidecarrules.IsNative(sc.Container) {
			continue // a run-once init container has run: a new image would never be used
		}
		c := findContainer(pod.Spec.InitContainers, sc.Name)
		if c == nil || !sidecarrules.IsNative(*c) {
			return nil, nil, fmt.Errorf("pod %s/%s has no native sidecar %s of SidecarSet %s to upgrade", pod.Namespace, pod.Name, sc.Name, ss.Name)
		}
		sidecars = append(sidecars, sc.Name)
		if c.Image != sc.Image {
			patch.Spec.InitContainers = append(patch.Spec.InitContainers, imageOnly{Name: sc.Name, Image: sc.Image})
			restarted = append(restarted, sc.Name)
		}
	}

	annotated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, Annotations: map[string]string{}}}
	// The SidecarSet's patchPodMetadata as it is now, as OpenKruise applies it at each upgrade.
	patched, err := sidecarrules.PatchedAnnotations(pod, ss)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(annotated.Annotations, patched)
	for _, key := range []string{sidecarrules.HashAnnotation, sidecarrules.HashWithoutImageAnnotation, sidecarrules.InPlaceUpdateStateAnnotation} {
		if v, ok := pod.Annotations[key]; ok {
			annotated.Annotations[key] = v
		}
	}
	for key, hash := range map[string]string{sidecarrules.HashAnnotation: h.full, sidecarrules.HashWithoutImageAnnotation: h.withoutImage} {
		old, err := sidecarrules.UpgradeSpecs(pod, key)
		if err != nil {
			return nil, nil, err
		}
		list := old[ss.Name].SidecarList
		if len(list) == 0 {
			list = sidecars
		}
		err = sidecarrules.SetUpgradeSpec(annotated, key, sidecarrules.UpgradeSpec{
			UpdateTimestamp: metav1.NewTime(now), Hash: hash, SidecarSetName: ss.Name,
			SidecarList: list, ControllerRevision: rev,
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if len(hotAnnotations) > 0 {
		raw, err := sidecarrules.EncodeWorkingCopies(working)
		if err != nil {
			return nil, nil, err
		}
		hotAnnotations[sidecarrules.WorkingHotUpgradeAnnotation] = raw
		for k, v := range hotAnnotations {
			annotated.Annotations[k] = v
		}
	}
	states[ss.Name] = &pub.InPlaceUpdateState{
		Revision:              rev,
		UpdateTimestamp:       metav1.NewTime(now),
		LastContainerStatuses: inplace.LastStatuses(pod, restarted),
		UpdateImages:          len(restarted) > 0,
		UpdateResources:       resize != nil && len(resize.ContainerResources) > 0,
	}
	raw, err := json.Marshal(states)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding annotation %s: %w", sidecarrules.InPlaceUpdateStateAnnotation, err)
	}
	annotated.Annotations[sidecarrules.InPlaceUpdateStateAnnotation] = string(raw)

	patch.Metadata = patchMeta{ResourceVersion: pod.ResourceVersion, Annotations: annotated.Annotations}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the upgrade patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	slices.Sort(restarted)
	return data, restarted, nil
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
