package v1beta1

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// ReservedPodLabels and ReservedPodAnnotations are the pod metadata keys kruise's workload
// controllers write on the pods they manage and decide by: a pod asked to go, its lifecycle
// state, its identity and revision, the record of its in-place update. A workload's pod template
// that carries one would, copied, decide for every pod at once (a template with
// apps.kruise.io/specified-delete had each new pod deleted at once, and created again, for ever;
// an in-place update could overwrite or remove a pod's update record). The controllers never copy
// them from a template, at creation or in place, and admission warns whoever writes such a
// template (OpenKruise admits it, so a refusal would break a migrating manifest).
var (
	ReservedPodLabels = []string{
		SpecifiedDeleteKey,
		pub.LifecycleStateKey,
		CloneSetInstanceID,
		appsv1.ControllerRevisionHashLabelKey,
	}
	ReservedPodAnnotations = []string{
		pub.InPlaceUpdateStateKey, pub.InPlaceUpdateStateKeyOld,
		pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld,
		pub.LifecycleTimestampKey,
	}
)

// IsReservedPodLabel and IsReservedPodAnnotation tell whether key is one of them.
func IsReservedPodLabel(key string) bool { return slices.Contains(ReservedPodLabels, key) }

// IsReservedPodAnnotation: see IsReservedPodLabel.
func IsReservedPodAnnotation(key string) bool { return slices.Contains(ReservedPodAnnotations, key) }

// WithoutReserved returns labels and annotations without the reserved keys; the maps are copied
// only when they hold one, so a template without them is not copied at all.
func WithoutReserved(labels, annotations map[string]string) (map[string]string, map[string]string) {
	return without(labels, IsReservedPodLabel), without(annotations, IsReservedPodAnnotation)
}

func without(m map[string]string, reserved func(string) bool) map[string]string {
	found := false
	for k := range m {
		if reserved(k) {
			found = true
			break
		}
	}
	if !found {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !reserved(k) {
			out[k] = v
		}
	}
	return out
}
