package gen

import (
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// PodProbeMarkerModifier changes a PodProbeMarker.
type PodProbeMarkerModifier func(*appsv1alpha1.PodProbeMarker)

// PodProbeMarker is a PodProbeMarker named name, changed by mods in order.
func PodProbeMarker(name string, mods ...PodProbeMarkerModifier) *appsv1alpha1.PodProbeMarker {
	return apply(&appsv1alpha1.PodProbeMarker{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// PodProbeMarkerFrom is a copy of m changed by mods; m is left as it was.
func PodProbeMarkerFrom(m *appsv1alpha1.PodProbeMarker, mods ...PodProbeMarkerModifier) *appsv1alpha1.PodProbeMarker {
	return apply(m.DeepCopy(), mods)
}

func SetPodProbeMarkerNamespace(ns string) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) { m.Namespace = ns }
}

func SetPodProbeMarkerUID(uid types.UID) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) { m.UID = uid }
}

func SetPodProbeMarkerGeneration(g int64) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) { m.Generation = g }
}

// SetPodProbeMarkerSelector selects the pods with labels (matchLabels).
func SetPodProbeMarkerSelector(labels map[string]string) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) {
		m.Spec.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(labels)}
	}
}

// AddPodProbeMarkerProbe appends p to the marker's probes.
func AddPodProbeMarkerProbe(p appsv1alpha1.PodContainerProbe) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes = append(m.Spec.Probes, p) }
}

// AddPodProbeMarkerAnnotations adds annotations to the marker's, replacing values of the same keys.
func AddPodProbeMarkerAnnotations(annotations map[string]string) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		maps.Copy(m.Annotations, annotations)
	}
}

func SetPodProbeMarkerFinalizers(f ...string) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) { m.Finalizers = f }
}

// SetPodProbeMarkerDeletionTimestamp marks the marker as being deleted since at.
func SetPodProbeMarkerDeletionTimestamp(at time.Time) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) { m.DeletionTimestamp = &metav1.Time{Time: at} }
}

func SetPodProbeMarkerStatus(st appsv1alpha1.PodProbeMarkerStatus) PodProbeMarkerModifier {
	return func(m *appsv1alpha1.PodProbeMarker) { m.Status = st }
}
