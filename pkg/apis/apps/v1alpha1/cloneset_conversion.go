package v1alpha1

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// CloneSet's versions differ in their strategies, and the rest converts
// field for field:
//   - v1alpha1's updateStrategy.type is v1beta1's updateStrategy.type
//     (RollingUpdate or OnDelete) with rollingUpdate.podUpdatePolicy, and
//     v1alpha1's other updateStrategy fields are those of rollingUpdate;
//   - scaleStrategy.disablePVCReuse is the inverse of enablePVCReuse;
//   - the label apps.kruise.io/cloneset-scaling-exclude-preparing-delete=true
//     is scaleStrategy.excludePreparingDelete (OpenKruise keeps the label in
//     v1beta1 too; kruise does not, so that the field alone decides there);
//   - the annotations apps.kruise.io/image-predownload-* are the
//     imagePreDownload* fields of inPlaceUpdateStrategy.
//
// Each direction maps these as OpenKruise does. Where mapping the result
// back would not give what was converted (an unset type, OnDelete with a
// podUpdatePolicy, a field set in v1alpha1's inPlaceUpdateStrategy, ...),
// the converted strategies, with that label and those annotations, are kept
// as JSON in an annotation of the result, and restored on the way back if
// the object still says what they say; an edited object is converted anew.

// CloneSetV1alpha1StrategiesAnnotation holds, on a v1beta1 CloneSet, the
// v1alpha1 strategies it was converted from when v1beta1 cannot say them.
const CloneSetV1alpha1StrategiesAnnotation = "apps.kruise.io/v1alpha1-cloneset-strategies"

// CloneSetV1beta1StrategiesAnnotation holds, on a v1alpha1 CloneSet, the
// v1beta1 strategies it was converted from when v1alpha1 cannot say them.
const CloneSetV1beta1StrategiesAnnotation = "apps.kruise.io/v1beta1-cloneset-strategies"

// preDownloadKeys are the v1alpha1 annotations of the imagePreDownload* fields.
var preDownloadKeys = []string{ImagePreDownloadParallelismKey, ImagePreDownloadTimeoutSecondsKey, ImagePreDownloadMinUpdatedReadyPods}

// alphaStrategies is the part of a v1alpha1 CloneSet that converts other
// than field for field; Labels and Annotations hold only the keys above.
type alphaStrategies struct {
	ScaleStrategy  CloneSetScaleStrategy  `json:"scaleStrategy"`
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy"`
	Labels         map[string]string      `json:"labels,omitempty"`
	Annotations    map[string]string      `json:"annotations,omitempty"`
}

// betaStrategies is alphaStrategies' counterpart in v1beta1.
type betaStrategies struct {
	ScaleStrategy  v1beta1.CloneSetScaleStrategy  `json:"scaleStrategy"`
	UpdateStrategy v1beta1.CloneSetUpdateStrategy `json:"updateStrategy"`
	Labels         map[string]string              `json:"labels,omitempty"`
	Annotations    map[string]string              `json:"annotations,omitempty"`
}

// CloneSetToV1beta1 converts a v1alpha1 CloneSet to v1beta1. The result
// shares no memory with in.
func CloneSetToV1beta1(in *CloneSet) *v1beta1.CloneSet {
	c := in.DeepCopy()
	kept, hasKept := takeKeys(&c.Annotations, CloneSetV1beta1StrategiesAnnotation)[CloneSetV1beta1StrategiesAnnotation]
	a := alphaStrategies{
		ScaleStrategy: c.Spec.ScaleStrategy, UpdateStrategy: c.Spec.UpdateStrategy,
		Labels:      takeKeys(&c.Labels, CloneSetScalingExcludePreparingDeleteKey),
		Annotations: takeKeys(&c.Annotations, preDownloadKeys...),
	}
	b := strategiesToBeta(a)
	var restored betaStrategies
	if hasKept && json.Unmarshal([]byte(kept), &restored) == nil && sameJSON(strategiesToAlpha(restored), a) {
		b = restored
	}

	out := &v1beta1.CloneSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "CloneSet"
	if !sameJSON(strategiesToAlpha(b), a) {
		putKeys(&out.Annotations, map[string]string{CloneSetV1alpha1StrategiesAnnotation: string(mustJSON(a))})
	}
	putKeys(&out.Labels, b.Labels)
	putKeys(&out.Annotations, b.Annotations)
	out.Spec = v1beta1.CloneSetSpec{
		Replicas: c.Spec.Replicas, Selector: c.Spec.Selector, Template: c.Spec.Template,
		VolumeClaimTemplates: c.Spec.VolumeClaimTemplates,
		ScaleStrategy:        b.ScaleStrategy, UpdateStrategy: b.UpdateStrategy,
		RevisionHistoryLimit: c.Spec.RevisionHistoryLimit, MinReadySeconds: c.Spec.MinReadySeconds,
		Lifecycle: c.Spec.Lifecycle, ProgressDeadlineSeconds: c.Spec.ProgressDeadlineSeconds,
	}
	s := c.Status
	out.Status = v1beta1.CloneSetStatus{
		ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, UpdatedReplicas: s.UpdatedReplicas,
		UpdatedReadyReplicas: s.UpdatedReadyReplicas, UpdatedAvailableReplicas: s.UpdatedAvailableReplicas,
		ExpectedUpdatedReplicas: s.ExpectedUpdatedReplicas, UpdateRevision: s.UpdateRevision,
		CurrentRevision: s.CurrentRevision, CollisionCount: s.CollisionCount, LabelSelector: s.LabelSelector,
	}
	if s.Conditions != nil {
		out.Status.Conditions = make([]v1beta1.CloneSetCondition, len(s.Conditions))
		for i, cond := range s.Conditions {
			out.Status.Conditions[i] = v1beta1.CloneSetCondition{
				Type: v1beta1.CloneSetConditionType(cond.Type), Status: cond.Status,
				LastUpdateTime: cond.LastUpdateTime, LastTransitionTime: cond.LastTransitionTime,
				Reason: cond.Reason, Message: cond.Message,
			}
		}
	}
	return out
}

// CloneSetFromV1beta1 converts a v1beta1 CloneSet to v1alpha1. The result
// shares no memory with in.
func CloneSetFromV1beta1(in *v1beta1.CloneSet) *CloneSet {
	c := in.DeepCopy()
	kept, hasKept := takeKeys(&c.Annotations, CloneSetV1alpha1StrategiesAnnotation)[CloneSetV1alpha1StrategiesAnnotation]
	b := betaStrategies{
		ScaleStrategy: c.Spec.ScaleStrategy, UpdateStrategy: c.Spec.UpdateStrategy,
		Labels:      takeKeys(&c.Labels, CloneSetScalingExcludePreparingDeleteKey),
		Annotations: takeKeys(&c.Annotations, preDownloadKeys...),
	}
	a := strategiesToAlpha(b)
	var restored alphaStrategies
	if hasKept && json.Unmarshal([]byte(kept), &restored) == nil && sameJSON(strategiesToBeta(restored), b) {
		a = restored
	}

	out := &CloneSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "CloneSet"
	if !sameJSON(strategiesToBeta(a), b) {
		putKeys(&out.Annotations, map[string]string{CloneSetV1beta1StrategiesAnnotation: string(mustJSON(b))})
	}
	putKeys(&out.Labels, a.Labels)
	putKeys(&out.Annotations, a.Annotations)
	out.Spec = CloneSetSpec{
		Replicas: c.Spec.Replicas, Selector: c.Spec.Selector, Template: c.Spec.Template,
		VolumeClaimTemplates: c.Spec.VolumeClaimTemplates,
		ScaleStrategy:        a.ScaleStrategy, UpdateStrategy: a.UpdateStrategy,
		RevisionHistoryLimit: c.Spec.RevisionHistoryLimit, MinReadySeconds: c.Spec.MinReadySeconds,
		Lifecycle: c.Spec.Lifecycle, ProgressDeadlineSeconds: c.Spec.ProgressDeadlineSeconds,
	}
	s := c.Status
	out.Status = CloneSetStatus{
		ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, UpdatedReplicas: s.UpdatedReplicas,
		UpdatedReadyReplicas: s.UpdatedReadyReplicas, UpdatedAvailableReplicas: s.UpdatedAvailableReplicas,
		ExpectedUpdatedReplicas: s.ExpectedUpdatedReplicas, UpdateRevision: s.UpdateRevision,
		CurrentRevision: s.CurrentRevision, CollisionCount: s.CollisionCount, LabelSelector: s.LabelSelector,
	}
	if s.Conditions != nil {
		out.Status.Conditions = make([]CloneSetCondition, len(s.Conditions))
		for i, cond := range s.Conditions {
			out.Status.Conditions[i] = CloneSetCondition{
				Type: CloneSetConditionType(cond.Type), Status: cond.Status,
				LastUpdateTime: cond.LastUpdateTime, LastTransitionTime: cond.LastTransitionTime,
				Reason: cond.Reason, Message: cond.Message,
			}
		}
	}
	return out
}

// strategiesToBeta maps v1alpha1 strategies as OpenKruise does. The result
// may share memory with a.
func strategiesToBeta(a alphaStrategies) betaStrategies {
	b := betaStrategies{Labels: copyMap(a.Labels), Annotations: copyMap(a.Annotations)}
	// enablePVCReuse is written even when false (its JSON tag has no omitempty): left out, the
	// schema's default would add it at the object's next write, a spec change that raises
	// generation, and the storage-version migration's rewrite is such a write.
	b.ScaleStrategy = v1beta1.CloneSetScaleStrategy{
		PodsToDelete: a.ScaleStrategy.PodsToDelete, MaxUnavailable: a.ScaleStrategy.MaxUnavailable,
		EnablePVCReuse: !a.ScaleStrategy.DisablePVCReuse,
	}
	// The label "true" becomes the field (and comes back from it); another
	// value, which means false, stays.
	if b.Labels[CloneSetScalingExcludePreparingDeleteKey] == "true" {
		b.ScaleStrategy.ExcludePreparingDelete = true
		b.Labels = nil
	}
	u := a.UpdateStrategy
	ru := &v1beta1.RollingUpdateCloneSetStrategy{
		Partition: u.Partition, MaxUnavailable: u.MaxUnavailable, MaxSurge: u.MaxSurge, Paused: u.Paused,
		PriorityStrategy: u.PriorityStrategy, ScatterStrategy: u.ScatterStrategy,
	}
	if u.InPlaceUpdateStrategy != nil {
		ips := *u.InPlaceUpdateStrategy
		ru.InPlaceUpdateStrategy = &ips
	}
	// An annotation becomes its field unless the field is set already, or
	// the value is not one the field takes exactly (then it stays as it is).
	for _, key := range preDownloadKeys {
		v, ok := b.Annotations[key]
		if !ok || (ru.InPlaceUpdateStrategy != nil && preDownloadFieldSet(ru.InPlaceUpdateStrategy, key)) {
			continue
		}
		if ru.InPlaceUpdateStrategy == nil {
			ru.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{}
		}
		if setPreDownloadField(ru.InPlaceUpdateStrategy, key, v) {
			delete(b.Annotations, key)
		}
	}
	if len(b.Annotations) == 0 {
		b.Annotations = nil
	}
	switch u.Type {
	case OnDeleteCloneSetUpdateStrategyType:
		// ReCreate is what the v1beta1 schema defaults a rollingUpdate's policy to.
		b.UpdateStrategy.Type, ru.PodUpdatePolicy = v1beta1.OnDeleteCloneSetUpdateStrategyType, v1beta1.RecreateCloneSetPodUpdateStrategyType
	case "":
	default:
		b.UpdateStrategy.Type, ru.PodUpdatePolicy = v1beta1.RollingUpdateCloneSetUpdateStrategyType, v1beta1.CloneSetPodUpdateStrategyType(u.Type)
	}
	if b.UpdateStrategy.Type != v1beta1.RollingUpdateCloneSetUpdateStrategyType && rollingUpdateIsEmpty(*ru) {
		ru = nil
	}
	b.UpdateStrategy.RollingUpdate = ru
	return b
}

// strategiesToAlpha maps v1beta1 strategies as OpenKruise does. The result
// may share memory with b.
func strategiesToAlpha(b betaStrategies) alphaStrategies {
	a := alphaStrategies{Labels: copyMap(b.Labels), Annotations: copyMap(b.Annotations)}
	a.ScaleStrategy = CloneSetScaleStrategy{
		PodsToDelete: b.ScaleStrategy.PodsToDelete, MaxUnavailable: b.ScaleStrategy.MaxUnavailable,
		DisablePVCReuse: !b.ScaleStrategy.EnablePVCReuse,
	}
	if exclude := b.ScaleStrategy.ExcludePreparingDelete; exclude != (a.Labels[CloneSetScalingExcludePreparingDeleteKey] == "true") {
		if exclude {
			if a.Labels == nil {
				a.Labels = map[string]string{}
			}
			a.Labels[CloneSetScalingExcludePreparingDeleteKey] = "true"
		} else {
			delete(a.Labels, CloneSetScalingExcludePreparingDeleteKey)
		}
	}
	var policy v1beta1.CloneSetPodUpdateStrategyType
	if ru := b.UpdateStrategy.RollingUpdate; ru != nil {
		policy = ru.PodUpdatePolicy
		a.UpdateStrategy = CloneSetUpdateStrategy{
			Partition: ru.Partition, MaxUnavailable: ru.MaxUnavailable, MaxSurge: ru.MaxSurge, Paused: ru.Paused,
			PriorityStrategy: ru.PriorityStrategy, ScatterStrategy: ru.ScatterStrategy,
		}
		if ru.InPlaceUpdateStrategy != nil {
			ips := *ru.InPlaceUpdateStrategy
			// A field goes into its annotation, unless the annotation is set already.
			for _, key := range preDownloadKeys {
				if _, ok := a.Annotations[key]; ok || !preDownloadFieldSet(&ips, key) {
					continue
				}
				if a.Annotations == nil {
					a.Annotations = map[string]string{}
				}
				a.Annotations[key] = takePreDownloadField(&ips, key)
			}
			a.UpdateStrategy.InPlaceUpdateStrategy = &ips
		}
	}
	switch b.UpdateStrategy.Type {
	case v1beta1.OnDeleteCloneSetUpdateStrategyType:
		a.UpdateStrategy.Type = OnDeleteCloneSetUpdateStrategyType
	case v1beta1.RollingUpdateCloneSetUpdateStrategyType:
		a.UpdateStrategy.Type = RecreateCloneSetUpdateStrategyType
		if policy != "" {
			a.UpdateStrategy.Type = CloneSetUpdateStrategyType(policy)
		}
	default:
		a.UpdateStrategy.Type = CloneSetUpdateStrategyType(policy)
	}
	return a
}

// rollingUpdateIsEmpty: ru has nothing set but perhaps its policy.
func rollingUpdateIsEmpty(ru v1beta1.RollingUpdateCloneSetStrategy) bool {
	ru.PodUpdatePolicy = ""
	return string(mustJSON(ru)) == "{}"
}

func preDownloadFieldSet(ips *pub.InPlaceUpdateStrategy, key string) bool {
	switch key {
	case ImagePreDownloadParallelismKey:
		return ips.ImagePreDownloadParallelism != nil
	case ImagePreDownloadTimeoutSecondsKey:
		return ips.ImagePreDownloadTimeoutSeconds != nil
	default:
		return ips.ImagePreDownloadMinUpdatedReadyPods != nil
	}
}

// setPreDownloadField sets the field of key from an annotation's value if
// the field's schema takes the value and writes it back the same.
func setPreDownloadField(ips *pub.InPlaceUpdateStrategy, key, value string) bool {
	n, err := strconv.ParseInt(value, 10, 32)
	exact := err == nil && strconv.FormatInt(n, 10) == value
	switch key {
	case ImagePreDownloadParallelismKey:
		switch {
		case exact && n >= 0:
			v := intstr.FromInt32(int32(n))
			ips.ImagePreDownloadParallelism = &v
		case isPercent(value):
			v := intstr.FromString(value)
			ips.ImagePreDownloadParallelism = &v
		default:
			return false
		}
	case ImagePreDownloadTimeoutSecondsKey:
		if !exact || n < 1 {
			return false
		}
		v := int32(n)
		ips.ImagePreDownloadTimeoutSeconds = &v
	default:
		if !exact || n < 0 {
			return false
		}
		v := int32(n)
		ips.ImagePreDownloadMinUpdatedReadyPods = &v
	}
	return true
}

// takePreDownloadField clears the field of key and returns it as an annotation value.
func takePreDownloadField(ips *pub.InPlaceUpdateStrategy, key string) string {
	var out string
	switch key {
	case ImagePreDownloadParallelismKey:
		out, ips.ImagePreDownloadParallelism = ips.ImagePreDownloadParallelism.String(), nil
	case ImagePreDownloadTimeoutSecondsKey:
		out, ips.ImagePreDownloadTimeoutSeconds = strconv.FormatInt(int64(*ips.ImagePreDownloadTimeoutSeconds), 10), nil
	default:
		out, ips.ImagePreDownloadMinUpdatedReadyPods = strconv.FormatInt(int64(*ips.ImagePreDownloadMinUpdatedReadyPods), 10), nil
	}
	return out
}

// isPercent: "N%" as the schema's int-or-string rules take it.
func isPercent(s string) bool {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok || len(digits) == 0 || len(digits) > 9 {
		return false
	}
	for _, d := range []byte(digits) {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}

// takeKeys removes keys from *m and returns those it had (nil if none);
// *m becomes nil once empty.
func takeKeys(m *map[string]string, keys ...string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := (*m)[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
			delete(*m, k)
		}
	}
	if out != nil && len(*m) == 0 {
		*m = nil
	}
	return out
}

// putKeys sets the entries of kv in *m.
func putKeys(m *map[string]string, kv map[string]string) {
	for k, v := range kv {
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
	}
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// mustJSON encodes v, which holds only API types that always encode.
func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic("encoding a conversion helper annotation: " + err.Error())
	}
	return raw
}

// sameJSON: a and b read the same on the wire.
func sameJSON(a, b any) bool {
	return bytes.Equal(mustJSON(a), mustJSON(b))
}
