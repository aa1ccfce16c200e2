package sidecarrules

import (
	"maps"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// patchMetadata applies the SidecarSets' patchPodMetadata to pod's annotations in their order:
// Retain (the default) adds a key the pod does not have, Overwrite sets it, MergePatchJson merges
// the value as a JSON merge patch into the pod's (or sets it when the pod has none). Two
// SidecarSets overwriting the same key would make the result depend on their names, so that is
// refused naming both. Which keys a SidecarSet may patch at all is decided when the SidecarSet is
// admitted (OpenKruise's allow-list, see PatchAllowList), not per pod.
func patchMetadata(pod *corev1.Pod, ref string, sets []*appsv1beta1.SidecarSet) error {
	overwrittenBy := map[string]string{}
	for _, ss := range sets {
		for _, p := range ss.Spec.PatchPodMetadata {
			if p.PatchPolicy != appsv1beta1.SidecarSetOverwritePatchPolicy {
				continue
			}
			for k := range p.Annotations {
				if other, ok := overwrittenBy[k]; ok && other != ss.Name {
					return refuse(ReasonAnnotationConflict,
						"pod %s: SidecarSets %s and %s both overwrite the annotation %q", ref, other, ss.Name, k)
				}
				overwrittenBy[k] = ss.Name
			}
		}
	}
	for _, ss := range sets {
		for _, p := range ss.Spec.PatchPodMetadata {
			if len(p.Annotations) == 0 {
				continue
			}
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			switch p.PatchPolicy {
			case appsv1beta1.SidecarSetOverwritePatchPolicy:
				maps.Copy(pod.Annotations, p.Annotations)
			case appsv1beta1.SidecarSetMergePatchJsonPatchPolicy:
				for k, patch := range p.Annotations {
					current, ok := pod.Annotations[k]
					if !ok || current == "" {
						pod.Annotations[k] = patch
						continue
					}
					merged, err := jsonpatch.MergePatch([]byte(current), []byte(patch))
					if err != nil {
						return refuse(ReasonInvalidPatch,
							"pod %s: SidecarSet %s: patchPodMetadata MergePatchJson of annotation %q: %v", ref, ss.Name, k, err)
					}
					pod.Annotations[k] = string(merged)
				}
			default:
				for k, v := range p.Annotations {
					if _, ok := pod.Annotations[k]; !ok {
						pod.Annotations[k] = v
					}
				}
			}
		}
	}
	return nil
}

// PatchedAnnotations returns the annotations of pod that ss's patchPodMetadata sets or changes
// (by their policies, as at injection), for an in-place upgrade to carry: OpenKruise's controller
// applies a SidecarSet's patchPodMetadata again whenever it upgrades a pod, so a value changed
// in the SidecarSet reaches the pods it upgrades. Keys left as they are are not returned.
func PatchedAnnotations(pod *corev1.Pod, ss *appsv1beta1.SidecarSet) (map[string]string, error) {
	if len(ss.Spec.PatchPodMetadata) == 0 {
		return nil, nil
	}
	patched := &corev1.Pod{ObjectMeta: *pod.ObjectMeta.DeepCopy()}
	ref := pod.Namespace + "/" + pod.Name
	if err := patchMetadata(patched, ref, []*appsv1beta1.SidecarSet{ss}); err != nil {
		return nil, err
	}
	var out map[string]string
	for k, v := range patched.Annotations {
		if old, ok := pod.Annotations[k]; ok && old == v {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}
