package sidecarrules

import (
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ForPod picks, of all SidecarSets, those that inject into pod, whose namespace carries nsLabels:
// not paused (injectionStrategy.paused), selecting the pod, and not the base of a canary
// SidecarSet that also selects it (a canary, annotated SidecarSetCanaryAnnotation "true" and
// SidecarSetBaseAnnotation <base>, replaces its base for the pods it selects). A SidecarSet whose
// selector does not parse selects nothing (the schema refuses such selectors; one stored before
// must not block every pod the webhook sees); skipped names it, for the caller to log.
func ForPod(all []*appsv1beta1.SidecarSet, pod *corev1.Pod, nsLabels map[string]string) (matched []*appsv1beta1.SidecarSet, skipped []error) {
	replaced := map[string]bool{}
	for _, ss := range all {
		if ss.Spec.InjectionStrategy.Paused {
			continue
		}
		ok, err := Selects(ss, pod, nsLabels)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		if !ok {
			continue
		}
		if base, canary := CanaryBase(ss); canary {
			replaced[base] = true
		}
		matched = append(matched, ss)
	}
	out := matched[:0:0]
	for _, ss := range matched {
		if !replaced[ss.Name] {
			out = append(out, ss)
		}
	}
	return out, skipped
}

// CanaryBase names the SidecarSet ss is a canary of, if it is one.
func CanaryBase(ss *appsv1beta1.SidecarSet) (string, bool) {
	base := ss.Annotations[appsv1beta1.SidecarSetBaseAnnotation]
	return base, ss.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] == "true" && base != ""
}
