package sidecarrules

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// recordInjection writes OpenKruise's annotations on pod: per SidecarSet that injected a
// container, an UpgradeSpec in HashAnnotation (with the ControllerRevision injected) and in
// HashWithoutImageAnnotation (without, as OpenKruise writes it); and every SidecarSet's name in
// InjectedListAnnotation, sorted, with those already listed.
func recordInjection(pod *corev1.Pod, ref string, sets []*appsv1beta1.SidecarSet, lists map[string][]string, now metav1.Time) error {
	names := Injected(pod)
	for _, ss := range sets {
		names = append(names, ss.Name)
		if len(ss.Spec.Containers)+len(ss.Spec.InitContainers) == 0 {
			continue
		}
		hash, err := Hash(ss)
		if err != nil {
			return err
		}
		withoutImage, err := HashWithoutImage(ss)
		if err != nil {
			return err
		}
		spec := UpgradeSpec{UpdateTimestamp: now, Hash: hash, SidecarSetName: ss.Name, SidecarList: lists[ss.Name], ControllerRevision: ss.Status.LatestRevision}
		if err := SetUpgradeSpec(pod, HashAnnotation, spec); err != nil {
			return refuse(ReasonInvalidAnnotation, "pod %s: %v", ref, err)
		}
		spec.Hash, spec.ControllerRevision = withoutImage, ""
		if err := SetUpgradeSpec(pod, HashWithoutImageAnnotation, spec); err != nil {
			return refuse(ReasonInvalidAnnotation, "pod %s: %v", ref, err)
		}
	}
	slices.Sort(names)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[InjectedListAnnotation] = strings.Join(slices.Compact(names), ",")
	return nil
}
