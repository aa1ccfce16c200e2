package v1alpha1

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// DaemonSet's versions differ in three places, and the rest converts field
// for field:
//   - v1alpha1's rollingUpdateType Surging is v1beta1's Standard, with the
//     maxSurge (1) and maxUnavailable (0) that Surging defaults to when unset
//     (OpenKruise's defaulting webhook writes them before converting; kruise
//     has no such webhook);
//   - the annotation daemonset.kruise.io/progressive-create-pod="true" is
//     scaleStrategy.partitionedScaling (OpenKruise keeps the annotation in
//     v1beta1 too; kruise does not, so that the field alone decides there);
//   - status.daemonSetHash is status.updateRevision.
//
// As for CloneSet, where mapping the result back would not give what was
// converted (Surging, a scaleStrategy without partitionedScaling, ...), the
// converted strategies, with that annotation, are kept as JSON in an
// annotation of the result and restored on the way back if the object
// still says what they say; an edited object is converted anew.

// DaemonSetV1alpha1StrategiesAnnotation holds, on a v1beta1 DaemonSet, the
// v1alpha1 strategies it was converted from when v1beta1 cannot say them.
const DaemonSetV1alpha1StrategiesAnnotation = "apps.kruise.io/v1alpha1-daemonset-strategies"

// DaemonSetV1beta1StrategiesAnnotation holds, on a v1alpha1 DaemonSet, the
// v1beta1 strategies it was converted from when v1alpha1 cannot say them.
const DaemonSetV1beta1StrategiesAnnotation = "apps.kruise.io/v1beta1-daemonset-strategies"

// alphaDaemonSetStrategies is the part of a v1alpha1 DaemonSet that
// converts other than field for field; Annotations holds only
// ProgressiveCreatePodAnnotation.
type alphaDaemonSetStrategies struct {
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy"`
	Annotations    map[string]string       `json:"annotations,omitempty"`
}

// betaDaemonSetStrategies is alphaDaemonSetStrategies' counterpart in v1beta1.
type betaDaemonSetStrategies struct {
	UpdateStrategy v1beta1.DaemonSetUpdateStrategy `json:"updateStrategy"`
	ScaleStrategy  *v1beta1.DaemonSetScaleStrategy `json:"scaleStrategy,omitempty"`
	Annotations    map[string]string               `json:"annotations,omitempty"`
}

// DaemonSetToV1beta1 converts a v1alpha1 DaemonSet to v1beta1. The result
// shares no memory with in.
func DaemonSetToV1beta1(in *DaemonSet) *v1beta1.DaemonSet {
	c := in.DeepCopy()
	kept, hasKept := takeKeys(&c.Annotations, DaemonSetV1beta1StrategiesAnnotation)[DaemonSetV1beta1StrategiesAnnotation]
	a := alphaDaemonSetStrategies{
		UpdateStrategy: c.Spec.UpdateStrategy,
		Annotations:    takeKeys(&c.Annotations, ProgressiveCreatePodAnnotation),
	}
	b := daemonSetStrategiesToBeta(a)
	var restored betaDaemonSetStrategies
	if hasKept && json.Unmarshal([]byte(kept), &restored) == nil && sameJSON(daemonSetStrategiesToAlpha(restored), a) {
		b = restored
	}

	out := &v1beta1.DaemonSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "DaemonSet"
	if !sameJSON(daemonSetStrategiesToAlpha(b), a) {
		putKeys(&out.Annotations, map[string]string{DaemonSetV1alpha1StrategiesAnnotation: string(mustJSON(a))})
	}
	putKeys(&out.Annotations, b.Annotations)
	out.Spec = v1beta1.DaemonSetSpec{
		Selector: c.Spec.Selector, Template: c.Spec.Template, UpdateStrategy: b.UpdateStrategy,
		MinReadySeconds: c.Spec.MinReadySeconds, BurstReplicas: c.Spec.BurstReplicas,
		RevisionHistoryLimit: c.Spec.RevisionHistoryLimit, Lifecycle: c.Spec.Lifecycle,
		ScaleStrategy: b.ScaleStrategy,
	}
	s := c.Status
	out.Status = v1beta1.DaemonSetStatus{
		CurrentNumberScheduled: s.CurrentNumberScheduled, NumberMisscheduled: s.NumberMisscheduled,
		DesiredNumberScheduled: s.DesiredNumberScheduled, NumberReady: s.NumberReady,
		ObservedGeneration: s.ObservedGeneration, UpdatedNumberScheduled: s.UpdatedNumberScheduled,
		NumberAvailable: s.NumberAvailable, NumberUnavailable: s.NumberUnavailable,
		CollisionCount: s.CollisionCount, Conditions: s.Conditions, UpdateRevision: s.DaemonSetHash,
	}
	return out
}

// DaemonSetFromV1beta1 converts a v1beta1 DaemonSet to v1alpha1. The result
// shares no memory with in.
func DaemonSetFromV1beta1(in *v1beta1.DaemonSet) *DaemonSet {
	c := in.DeepCopy()
	kept, hasKept := takeKeys(&c.Annotations, DaemonSetV1alpha1StrategiesAnnotation)[DaemonSetV1alpha1StrategiesAnnotation]
	b := betaDaemonSetStrategies{
		UpdateStrategy: c.Spec.UpdateStrategy, ScaleStrategy: c.Spec.ScaleStrategy,
		Annotations: takeKeys(&c.Annotations, ProgressiveCreatePodAnnotation),
	}
	a := daemonSetStrategiesToAlpha(b)
	var restored alphaDaemonSetStrategies
	if hasKept && json.Unmarshal([]byte(kept), &restored) == nil && sameJSON(daemonSetStrategiesToBeta(restored), b) {
		a = restored
	}

	out := &DaemonSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "DaemonSet"
	if !sameJSON(daemonSetStrategiesToBeta(a), b) {
		putKeys(&out.Annotations, map[string]string{DaemonSetV1beta1StrategiesAnnotation: string(mustJSON(b))})
	}
	putKeys(&out.Annotations, a.Annotations)
	out.Spec = DaemonSetSpec{
		Selector: c.Spec.Selector, Template: c.Spec.Template, UpdateStrategy: a.UpdateStrategy,
		MinReadySeconds: c.Spec.MinReadySeconds, BurstReplicas: c.Spec.BurstReplicas,
		RevisionHistoryLimit: c.Spec.RevisionHistoryLimit, Lifecycle: c.Spec.Lifecycle,
	}
	s := c.Status
	out.Status = DaemonSetStatus{
		CurrentNumberScheduled: s.CurrentNumberScheduled, NumberMisscheduled: s.NumberMisscheduled,
		DesiredNumberScheduled: s.DesiredNumberScheduled, NumberReady: s.NumberReady,
		ObservedGeneration: s.ObservedGeneration, UpdatedNumberScheduled: s.UpdatedNumberScheduled,
		NumberAvailable: s.NumberAvailable, NumberUnavailable: s.NumberUnavailable,
		CollisionCount: s.CollisionCount, Conditions: s.Conditions, DaemonSetHash: s.UpdateRevision,
	}
	return out
}

// daemonSetStrategiesToBeta maps v1alpha1 strategies as OpenKruise's
// defaulting and conversion together do. The result may share memory with
// a, but never changes it.
func daemonSetStrategiesToBeta(a alphaDaemonSetStrategies) betaDaemonSetStrategies {
	b := betaDaemonSetStrategies{Annotations: copyMap(a.Annotations)}
	// The annotation "true" becomes the field (and comes back from it);
	// another value, which means false, stays.
	if b.Annotations[ProgressiveCreatePodAnnotation] == "true" {
		b.ScaleStrategy = &v1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
		b.Annotations = nil
	}
	u := a.UpdateStrategy
	b.UpdateStrategy.Type = v1beta1.DaemonSetUpdateStrategyType(u.Type)
	if ru := u.RollingUpdate; ru != nil {
		out := &v1beta1.RollingUpdateDaemonSet{
			Type:           v1beta1.DaemonSetRollingUpdateType(ru.Type),
			MaxUnavailable: ru.MaxUnavailable, MaxSurge: ru.MaxSurge,
			Selector: ru.Selector, Partition: ru.Partition, Paused: ru.Paused,
		}
		if ru.Type == SurgingDaemonSetRollingUpdateType {
			out.Type = v1beta1.StandardDaemonSetRollingUpdateType
			if out.MaxSurge == nil {
				v := intstr.FromInt32(1)
				out.MaxSurge = &v
			}
			if out.MaxUnavailable == nil {
				v := intstr.FromInt32(0)
				out.MaxUnavailable = &v
			}
		}
		b.UpdateStrategy.RollingUpdate = out
	}
	return b
}

// daemonSetStrategiesToAlpha maps v1beta1 strategies as OpenKruise does.
// The result may share memory with b, but never changes it.
func daemonSetStrategiesToAlpha(b betaDaemonSetStrategies) alphaDaemonSetStrategies {
	a := alphaDaemonSetStrategies{Annotations: copyMap(b.Annotations)}
	partitioned := b.ScaleStrategy != nil && b.ScaleStrategy.PartitionedScaling
	if partitioned != (a.Annotations[ProgressiveCreatePodAnnotation] == "true") {
		if partitioned {
			a.Annotations = map[string]string{ProgressiveCreatePodAnnotation: "true"}
		} else {
			a.Annotations = nil
		}
	}
	u := b.UpdateStrategy
	a.UpdateStrategy.Type = DaemonSetUpdateStrategyType(u.Type)
	if ru := u.RollingUpdate; ru != nil {
		a.UpdateStrategy.RollingUpdate = &RollingUpdateDaemonSet{
			Type:           DaemonSetRollingUpdateType(ru.Type),
			MaxUnavailable: ru.MaxUnavailable, MaxSurge: ru.MaxSurge,
			Selector: ru.Selector, Partition: ru.Partition, Paused: ru.Paused,
		}
	}
	return a
}
