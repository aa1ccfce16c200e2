package gen

import (
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ControllerRevisionModifier changes a ControllerRevision.
type ControllerRevisionModifier func(*appsv1.ControllerRevision)

// ControllerRevision is a ControllerRevision named name, changed by mods in
// order.
func ControllerRevision(name string, mods ...ControllerRevisionModifier) *appsv1.ControllerRevision {
	return apply(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// ControllerRevisionFrom is a copy of r changed by mods; r is left as it
// was.
func ControllerRevisionFrom(r *appsv1.ControllerRevision, mods ...ControllerRevisionModifier) *appsv1.ControllerRevision {
	return apply(r.DeepCopy(), mods)
}

func SetControllerRevisionNamespace(ns string) ControllerRevisionModifier {
	return func(r *appsv1.ControllerRevision) { r.Namespace = ns }
}

func SetControllerRevisionUID(uid types.UID) ControllerRevisionModifier {
	return func(r *appsv1.ControllerRevision) { r.UID = uid }
}

func SetControllerRevisionCreationTimestamp(at time.Time) ControllerRevisionModifier {
	return func(r *appsv1.ControllerRevision) { r.CreationTimestamp = metav1.NewTime(at) }
}

// AddControllerRevisionLabels merges labels into the revision's labels.
func AddControllerRevisionLabels(labels map[string]string) ControllerRevisionModifier {
	return func(r *appsv1.ControllerRevision) {
		if r.Labels == nil {
			r.Labels = map[string]string{}
		}
		maps.Copy(r.Labels, labels)
	}
}

func SetControllerRevisionOwnerReferences(refs ...metav1.OwnerReference) ControllerRevisionModifier {
	return func(r *appsv1.ControllerRevision) { r.OwnerReferences = refs }
}

// SetControllerRevisionNumber sets the revision's Revision.
func SetControllerRevisionNumber(n int64) ControllerRevisionModifier {
	return func(r *appsv1.ControllerRevision) { r.Revision = n }
}

// SetControllerRevisionData sets the revision's Data to a copy of raw.
func SetControllerRevisionData(raw []byte) ControllerRevisionModifier {
	return func(r *appsv1.ControllerRevision) { r.Data.Raw = slices.Clone(raw) }
}
