package v1alpha1

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// An Advanced StatefulSet's v1alpha1 is its v1beta1 without six spec
// fields (volumeClaimUpdateStrategy, reserveOrdinals, lifecycle,
// scaleStrategy, persistentVolumeClaimRetentionPolicy, ordinals); the rest
// converts field for field (status too: v1alpha1's status carries v1beta1's
// extra counts as kruise extensions). OpenKruise drops the six fields on the
// way to v1alpha1, so that a v1alpha1 client's update erases them; kruise
// keeps those that are set as JSON in StatefulSetV1beta1FieldsAnnotation of
// the v1alpha1 object, and restores them on the way back.
//
// The annotation is restored only when it reads back exactly as kruise
// writes it (set fields, canonical JSON); any other value is no
// annotation of kruise's and stays, as it is, on the v1beta1 object.

// StatefulSetV1beta1FieldsAnnotation holds, on a v1alpha1 StatefulSet, the
// v1beta1-only spec fields of the object it was converted from.
const StatefulSetV1beta1FieldsAnnotation = "apps.kruise.io/v1beta1-statefulset-fields"

// statefulSetBetaFields are the v1beta1 spec fields v1alpha1 lacks, each
// nil when unset.
type statefulSetBetaFields struct {
	VolumeClaimUpdateStrategy            *v1beta1.VolumeClaimUpdateStrategy                       `json:"volumeClaimUpdateStrategy,omitempty"`
	ReserveOrdinals                      []intstr.IntOrString                                     `json:"reserveOrdinals,omitempty"`
	Lifecycle                            *pub.Lifecycle                                           `json:"lifecycle,omitempty"`
	ScaleStrategy                        *v1beta1.StatefulSetScaleStrategy                        `json:"scaleStrategy,omitempty"`
	PersistentVolumeClaimRetentionPolicy *v1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	Ordinals                             *v1beta1.StatefulSetOrdinals                             `json:"ordinals,omitempty"`
}

// betaFieldsOf takes the v1beta1-only fields of spec; "" when none is set.
func betaFieldsOf(spec *v1beta1.StatefulSetSpec) string {
	f := statefulSetBetaFields{
		ReserveOrdinals: spec.ReserveOrdinals, Lifecycle: spec.Lifecycle, ScaleStrategy: spec.ScaleStrategy,
		PersistentVolumeClaimRetentionPolicy: spec.PersistentVolumeClaimRetentionPolicy, Ordinals: spec.Ordinals,
	}
	if spec.VolumeClaimUpdateStrategy != (v1beta1.VolumeClaimUpdateStrategy{}) {
		vcus := spec.VolumeClaimUpdateStrategy
		f.VolumeClaimUpdateStrategy = &vcus
	}
	raw := string(mustJSON(f))
	if raw == "{}" {
		return ""
	}
	return raw
}

// parseBetaFields reads an annotation value written by betaFieldsOf.
func parseBetaFields(raw string) (statefulSetBetaFields, bool) {
	var f statefulSetBetaFields
	if raw == "" || raw == "{}" || json.Unmarshal([]byte(raw), &f) != nil || string(mustJSON(f)) != raw {
		return statefulSetBetaFields{}, false
	}
	return f, true
}

// StatefulSetToV1beta1 converts a v1alpha1 StatefulSet to v1beta1. The
// result shares no memory with in.
func StatefulSetToV1beta1(in *StatefulSet) *v1beta1.StatefulSet {
	c := in.DeepCopy()
	var extra statefulSetBetaFields
	if f, ok := parseBetaFields(c.Annotations[StatefulSetV1beta1FieldsAnnotation]); ok {
		extra = f
		takeKeys(&c.Annotations, StatefulSetV1beta1FieldsAnnotation)
	}

	out := &v1beta1.StatefulSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "StatefulSet"
	s := c.Spec
	out.Spec = v1beta1.StatefulSetSpec{
		Replicas: s.Replicas, Selector: s.Selector, Template: s.Template, VolumeClaimTemplates: s.VolumeClaimTemplates,
		ServiceName: s.ServiceName, PodManagementPolicy: s.PodManagementPolicy,
		UpdateStrategy: v1beta1.StatefulSetUpdateStrategy{
			Type: s.UpdateStrategy.Type, RollingUpdate: rollingUpdateToBeta(s.UpdateStrategy.RollingUpdate),
		},
		RevisionHistoryLimit: s.RevisionHistoryLimit,
		ReserveOrdinals:      extra.ReserveOrdinals, Lifecycle: extra.Lifecycle, ScaleStrategy: extra.ScaleStrategy,
		PersistentVolumeClaimRetentionPolicy: extra.PersistentVolumeClaimRetentionPolicy, Ordinals: extra.Ordinals,
	}
	if extra.VolumeClaimUpdateStrategy != nil {
		out.Spec.VolumeClaimUpdateStrategy = *extra.VolumeClaimUpdateStrategy
	}
	st := c.Status
	out.Status = v1beta1.StatefulSetStatus{
		ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, ReadyReplicas: st.ReadyReplicas,
		AvailableReplicas: st.AvailableReplicas, CurrentReplicas: st.CurrentReplicas, UpdatedReplicas: st.UpdatedReplicas,
		UpdatedReadyReplicas: st.UpdatedReadyReplicas, UpdatedAvailableReplicas: st.UpdatedAvailableReplicas,
		CurrentRevision: st.CurrentRevision, UpdateRevision: st.UpdateRevision, CollisionCount: st.CollisionCount,
		Conditions: st.Conditions, LabelSelector: st.LabelSelector,
	}
	if st.VolumeClaims != nil {
		out.Status.VolumeClaims = make([]v1beta1.VolumeClaimStatus, len(st.VolumeClaims))
		for i, vc := range st.VolumeClaims {
			out.Status.VolumeClaims[i] = v1beta1.VolumeClaimStatus(vc)
		}
	}
	return out
}

// StatefulSetFromV1beta1 converts a v1beta1 StatefulSet to v1alpha1, its
// v1beta1-only fields kept in StatefulSetV1beta1FieldsAnnotation. The
// result shares no memory with in.
func StatefulSetFromV1beta1(in *v1beta1.StatefulSet) *StatefulSet {
	c := in.DeepCopy()
	out := &StatefulSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "StatefulSet"
	// With none set, an annotation of that name already there stays: it is
	// one the other direction did not restore.
	if kept := betaFieldsOf(&c.Spec); kept != "" {
		putKeys(&out.Annotations, map[string]string{StatefulSetV1beta1FieldsAnnotation: kept})
	}
	s := c.Spec
	out.Spec = StatefulSetSpec{
		Replicas: s.Replicas, Selector: s.Selector, Template: s.Template, VolumeClaimTemplates: s.VolumeClaimTemplates,
		ServiceName: s.ServiceName, PodManagementPolicy: s.PodManagementPolicy,
		UpdateStrategy: StatefulSetUpdateStrategy{
			Type: s.UpdateStrategy.Type, RollingUpdate: rollingUpdateToAlpha(s.UpdateStrategy.RollingUpdate),
		},
		RevisionHistoryLimit: s.RevisionHistoryLimit,
	}
	st := c.Status
	out.Status = StatefulSetStatus{
		ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, ReadyReplicas: st.ReadyReplicas,
		AvailableReplicas: st.AvailableReplicas, CurrentReplicas: st.CurrentReplicas, UpdatedReplicas: st.UpdatedReplicas,
		UpdatedReadyReplicas: st.UpdatedReadyReplicas, UpdatedAvailableReplicas: st.UpdatedAvailableReplicas,
		CurrentRevision: st.CurrentRevision, UpdateRevision: st.UpdateRevision, CollisionCount: st.CollisionCount,
		Conditions: st.Conditions, LabelSelector: st.LabelSelector,
	}
	if st.VolumeClaims != nil {
		out.Status.VolumeClaims = make([]VolumeClaimStatus, len(st.VolumeClaims))
		for i, vc := range st.VolumeClaims {
			out.Status.VolumeClaims[i] = VolumeClaimStatus(vc)
		}
	}
	return out
}

func rollingUpdateToBeta(ru *RollingUpdateStatefulSetStrategy) *v1beta1.RollingUpdateStatefulSetStrategy {
	if ru == nil {
		return nil
	}
	out := &v1beta1.RollingUpdateStatefulSetStrategy{
		Partition: ru.Partition, MaxUnavailable: ru.MaxUnavailable,
		PodUpdatePolicy: v1beta1.PodUpdateStrategyType(ru.PodUpdatePolicy), Paused: ru.Paused,
		InPlaceUpdateStrategy: ru.InPlaceUpdateStrategy, MinReadySeconds: ru.MinReadySeconds,
	}
	if ru.UnorderedUpdate != nil {
		out.UnorderedUpdate = &v1beta1.UnorderedUpdateStrategy{PriorityStrategy: ru.UnorderedUpdate.PriorityStrategy}
	}
	return out
}

func rollingUpdateToAlpha(ru *v1beta1.RollingUpdateStatefulSetStrategy) *RollingUpdateStatefulSetStrategy {
	if ru == nil {
		return nil
	}
	out := &RollingUpdateStatefulSetStrategy{
		Partition: ru.Partition, MaxUnavailable: ru.MaxUnavailable,
		PodUpdatePolicy: PodUpdateStrategyType(ru.PodUpdatePolicy), Paused: ru.Paused,
		InPlaceUpdateStrategy: ru.InPlaceUpdateStrategy, MinReadySeconds: ru.MinReadySeconds,
	}
	if ru.UnorderedUpdate != nil {
		out.UnorderedUpdate = &UnorderedUpdateStrategy{PriorityStrategy: ru.UnorderedUpdate.PriorityStrategy}
	}
	return out
}
