package gen

import (
	corev1 "k8s.io/api/core/v1"
)

// PodTemplate is the template of the pod that mods build: its metadata and spec.
func PodTemplate(mods ...PodModifier) *corev1.PodTemplateSpec {
	p := Pod("", mods...)
	return &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
}
