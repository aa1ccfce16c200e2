package gen

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigMapModifier changes a ConfigMap.
type ConfigMapModifier func(*corev1.ConfigMap)

// ConfigMap is a ConfigMap named name, changed by mods in order.
func ConfigMap(name string, mods ...ConfigMapModifier) *corev1.ConfigMap {
	return apply(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// ConfigMapFrom is a copy of c changed by mods; c is left as it was.
func ConfigMapFrom(c *corev1.ConfigMap, mods ...ConfigMapModifier) *corev1.ConfigMap {
	return apply(c.DeepCopy(), mods)
}

func SetConfigMapNamespace(ns string) ConfigMapModifier {
	return func(c *corev1.ConfigMap) { c.Namespace = ns }
}

func SetConfigMapResourceVersion(rv string) ConfigMapModifier {
	return func(c *corev1.ConfigMap) { c.ResourceVersion = rv }
}

func SetConfigMapOwnerReferences(refs ...metav1.OwnerReference) ConfigMapModifier {
	return func(c *corev1.ConfigMap) { c.OwnerReferences = refs }
}

// SetConfigMapData replaces the ConfigMap's data with a copy of data.
func SetConfigMapData(data map[string]string) ConfigMapModifier {
	return func(c *corev1.ConfigMap) { c.Data = maps.Clone(data) }
}
