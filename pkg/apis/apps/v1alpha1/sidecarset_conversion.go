package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// SidecarSet's versions differ in two places, and the rest converts field
// for field:
//   - v1alpha1's spec.namespace is, in v1beta1, a namespaceSelector that
//     matches the label kubernetes.io/metadata.name (which the API server
//     puts on every namespace) against it; a v1alpha1 namespaceSelector
//     beside a namespace is dropped (as OpenKruise drops it; the v1alpha1
//     schema refuses the two together);
//   - the label apps.kruise.io/sidecarset-custom-version on a v1alpha1
//     SidecarSet is v1beta1's spec.customVersion (OpenKruise drops the label
//     in v1beta1; so does kruise, so that the field alone decides there).
//
// As for CloneSet, each direction maps these as OpenKruise does; where
// mapping the result back would not give what was converted (a namespace,
// which comes back as a namespaceSelector; an empty custom version; a
// v1beta1 label beside customVersion, ...), the converted fields, with that
// label, are kept as JSON in an annotation of the result and restored on the
// way back if the object still says what they say; an edited object is
// converted anew.

// NamespaceNameLabel is the label the API server gives every namespace,
// with its name as the value.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// SidecarSetV1alpha1FieldsAnnotation holds, on a v1beta1 SidecarSet, the
// v1alpha1 fields it was converted from when v1beta1 cannot say them.
const SidecarSetV1alpha1FieldsAnnotation = "apps.kruise.io/v1alpha1-sidecarset-fields"

// SidecarSetV1beta1FieldsAnnotation holds, on a v1alpha1 SidecarSet, the
// v1beta1 fields it was converted from when v1alpha1 cannot say them.
const SidecarSetV1beta1FieldsAnnotation = "apps.kruise.io/v1beta1-sidecarset-fields"

// alphaSidecarSetFields is the part of a v1alpha1 SidecarSet that converts
// other than field for field; Labels holds only SidecarSetCustomVersionLabel.
type alphaSidecarSetFields struct {
	Namespace         string                `json:"namespace,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	Labels            map[string]string     `json:"labels,omitempty"`
}

// betaSidecarSetFields is alphaSidecarSetFields' counterpart in v1beta1.
type betaSidecarSetFields struct {
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	CustomVersion     string                `json:"customVersion,omitempty"`
	Labels            map[string]string     `json:"labels,omitempty"`
}

// SidecarSetToV1beta1 converts a v1alpha1 SidecarSet to v1beta1. The result
// shares no memory with in.
func SidecarSetToV1beta1(in *SidecarSet) *v1beta1.SidecarSet {
	c := in.DeepCopy()
	kept, hasKept := takeKeys(&c.Annotations, SidecarSetV1beta1FieldsAnnotation)[SidecarSetV1beta1FieldsAnnotation]
	a := alphaSidecarSetFields{
		Namespace: c.Spec.Namespace, NamespaceSelector: c.Spec.NamespaceSelector,
		Labels: takeKeys(&c.Labels, SidecarSetCustomVersionLabel),
	}
	b := sidecarSetFieldsToBeta(a)
	var restored betaSidecarSetFields
	if hasKept && json.Unmarshal([]byte(kept), &restored) == nil && sameJSON(sidecarSetFieldsToAlpha(restored), a) {
		b = restored
	}

	out := &v1beta1.SidecarSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "SidecarSet"
	if !sameJSON(sidecarSetFieldsToAlpha(b), a) {
		putKeys(&out.Annotations, map[string]string{SidecarSetV1alpha1FieldsAnnotation: string(mustJSON(a))})
	}
	putKeys(&out.Labels, b.Labels)
	s := c.Spec
	out.Spec = v1beta1.SidecarSetSpec{
		Selector: s.Selector, NamespaceSelector: b.NamespaceSelector,
		InitContainers: sidecarContainersToBeta(s.InitContainers), Containers: sidecarContainersToBeta(s.Containers),
		Volumes: s.Volumes, UpdateStrategy: v1beta1.SidecarSetUpdateStrategy{
			Type: v1beta1.SidecarSetUpdateStrategyType(s.UpdateStrategy.Type), Paused: s.UpdateStrategy.Paused,
			Selector: s.UpdateStrategy.Selector, Partition: s.UpdateStrategy.Partition,
			MaxUnavailable: s.UpdateStrategy.MaxUnavailable, PriorityStrategy: s.UpdateStrategy.PriorityStrategy,
			ScatterStrategy: s.UpdateStrategy.ScatterStrategy,
		},
		InjectionStrategy:    v1beta1.SidecarSetInjectionStrategy{Paused: s.InjectionStrategy.Paused},
		ImagePullSecrets:     s.ImagePullSecrets,
		RevisionHistoryLimit: s.RevisionHistoryLimit,
		CustomVersion:        b.CustomVersion,
	}
	if r := s.InjectionStrategy.Revision; r != nil {
		out.Spec.InjectionStrategy.Revision = &v1beta1.SidecarSetInjectRevision{
			CustomVersion: r.CustomVersion, RevisionName: r.RevisionName, Policy: v1beta1.SidecarSetInjectRevisionPolicy(r.Policy),
		}
	}
	if s.PatchPodMetadata != nil {
		out.Spec.PatchPodMetadata = make([]v1beta1.SidecarSetPatchPodMetadata, len(s.PatchPodMetadata))
		for i, p := range s.PatchPodMetadata {
			out.Spec.PatchPodMetadata[i] = v1beta1.SidecarSetPatchPodMetadata{
				Annotations: p.Annotations, PatchPolicy: v1beta1.SidecarSetPatchPolicyType(p.PatchPolicy),
			}
		}
	}
	out.Status = v1beta1.SidecarSetStatus(c.Status)
	return out
}

// SidecarSetFromV1beta1 converts a v1beta1 SidecarSet to v1alpha1. The
// result shares no memory with in.
func SidecarSetFromV1beta1(in *v1beta1.SidecarSet) *SidecarSet {
	c := in.DeepCopy()
	kept, hasKept := takeKeys(&c.Annotations, SidecarSetV1alpha1FieldsAnnotation)[SidecarSetV1alpha1FieldsAnnotation]
	b := betaSidecarSetFields{
		NamespaceSelector: c.Spec.NamespaceSelector, CustomVersion: c.Spec.CustomVersion,
		Labels: takeKeys(&c.Labels, SidecarSetCustomVersionLabel),
	}
	a := sidecarSetFieldsToAlpha(b)
	var restored alphaSidecarSetFields
	if hasKept && json.Unmarshal([]byte(kept), &restored) == nil && sameJSON(sidecarSetFieldsToBeta(restored), b) {
		a = restored
	}

	out := &SidecarSet{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "SidecarSet"
	if !sameJSON(sidecarSetFieldsToBeta(a), b) {
		putKeys(&out.Annotations, map[string]string{SidecarSetV1beta1FieldsAnnotation: string(mustJSON(b))})
	}
	putKeys(&out.Labels, a.Labels)
	s := c.Spec
	out.Spec = SidecarSetSpec{
		Selector: s.Selector, Namespace: a.Namespace, NamespaceSelector: a.NamespaceSelector,
		InitContainers: sidecarContainersToAlpha(s.InitContainers), Containers: sidecarContainersToAlpha(s.Containers),
		Volumes: s.Volumes, UpdateStrategy: SidecarSetUpdateStrategy{
			Type: SidecarSetUpdateStrategyType(s.UpdateStrategy.Type), Paused: s.UpdateStrategy.Paused,
			Selector: s.UpdateStrategy.Selector, Partition: s.UpdateStrategy.Partition,
			MaxUnavailable: s.UpdateStrategy.MaxUnavailable, PriorityStrategy: s.UpdateStrategy.PriorityStrategy,
			ScatterStrategy: s.UpdateStrategy.ScatterStrategy,
		},
		InjectionStrategy:    SidecarSetInjectionStrategy{Paused: s.InjectionStrategy.Paused},
		ImagePullSecrets:     s.ImagePullSecrets,
		RevisionHistoryLimit: s.RevisionHistoryLimit,
	}
	if r := s.InjectionStrategy.Revision; r != nil {
		out.Spec.InjectionStrategy.Revision = &SidecarSetInjectRevision{
			CustomVersion: r.CustomVersion, RevisionName: r.RevisionName, Policy: SidecarSetInjectRevisionPolicy(r.Policy),
		}
	}
	if s.PatchPodMetadata != nil {
		out.Spec.PatchPodMetadata = make([]SidecarSetPatchPodMetadata, len(s.PatchPodMetadata))
		for i, p := range s.PatchPodMetadata {
			out.Spec.PatchPodMetadata[i] = SidecarSetPatchPodMetadata{
				Annotations: p.Annotations, PatchPolicy: SidecarSetPatchPolicyType(p.PatchPolicy),
			}
		}
	}
	out.Status = SidecarSetStatus(c.Status)
	return out
}

// sidecarSetFieldsToBeta maps v1alpha1 fields as OpenKruise does. The
// result may share memory with a.
func sidecarSetFieldsToBeta(a alphaSidecarSetFields) betaSidecarSetFields {
	b := betaSidecarSetFields{NamespaceSelector: a.NamespaceSelector, Labels: copyMap(a.Labels)}
	if a.Namespace != "" {
		b.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: a.Namespace}}
	}
	if v, ok := b.Labels[SidecarSetCustomVersionLabel]; ok {
		b.CustomVersion = v
		b.Labels = nil
	}
	return b
}

// sidecarSetFieldsToAlpha maps v1beta1 fields as OpenKruise does. The
// result may share memory with b.
func sidecarSetFieldsToAlpha(b betaSidecarSetFields) alphaSidecarSetFields {
	a := alphaSidecarSetFields{NamespaceSelector: b.NamespaceSelector, Labels: copyMap(b.Labels)}
	if b.CustomVersion != "" {
		a.Labels = map[string]string{SidecarSetCustomVersionLabel: b.CustomVersion}
	}
	return a
}

func sidecarContainersToBeta(in []SidecarContainer) []v1beta1.SidecarContainer {
	if in == nil {
		return nil
	}
	out := make([]v1beta1.SidecarContainer, len(in))
	for i, c := range in {
		out[i] = v1beta1.SidecarContainer{
			Container:       c.Container,
			PodInjectPolicy: v1beta1.PodInjectPolicyType(c.PodInjectPolicy),
			UpgradeStrategy: v1beta1.SidecarContainerUpgradeStrategy{
				UpgradeType: v1beta1.SidecarContainerUpgradeType(c.UpgradeStrategy.UpgradeType), HotUpgradeEmptyImage: c.UpgradeStrategy.HotUpgradeEmptyImage,
			},
			ShareVolumePolicy: v1beta1.ShareVolumePolicy{Type: v1beta1.ShareVolumePolicyType(c.ShareVolumePolicy.Type)},
		}
		if p := c.ShareVolumeDevicePolicy; p != nil {
			out[i].ShareVolumeDevicePolicy = &v1beta1.ShareVolumePolicy{Type: v1beta1.ShareVolumePolicyType(p.Type)}
		}
		if c.TransferEnv != nil {
			out[i].TransferEnv = make([]v1beta1.TransferEnvVar, len(c.TransferEnv))
			for j, e := range c.TransferEnv {
				out[i].TransferEnv[j] = v1beta1.TransferEnvVar{
					SourceContainerName: e.SourceContainerName, SourceContainerNameFrom: (*v1beta1.SourceContainerNameSource)(e.SourceContainerNameFrom),
					EnvName: e.EnvName, EnvNames: e.EnvNames,
				}
			}
		}
		if p := c.ResourcesPolicy; p != nil {
			out[i].ResourcesPolicy = &v1beta1.ResourcesPolicy{
				TargetContainersMode: v1beta1.TargetContainersModeType(p.TargetContainersMode), TargetContainersNameRegex: p.TargetContainersNameRegex,
				ResourcesExpr: v1beta1.ResourcesExpr{
					Limits: (*v1beta1.ResourceExprLimits)(p.ResourcesExpr.Limits), Requests: (*v1beta1.ResourceExprRequests)(p.ResourcesExpr.Requests),
				},
			}
		}
	}
	return out
}

func sidecarContainersToAlpha(in []v1beta1.SidecarContainer) []SidecarContainer {
	if in == nil {
		return nil
	}
	out := make([]SidecarContainer, len(in))
	for i, c := range in {
		out[i] = SidecarContainer{
			Container:       c.Container,
			PodInjectPolicy: PodInjectPolicyType(c.PodInjectPolicy),
			UpgradeStrategy: SidecarContainerUpgradeStrategy{
				UpgradeType: SidecarContainerUpgradeType(c.UpgradeStrategy.UpgradeType), HotUpgradeEmptyImage: c.UpgradeStrategy.HotUpgradeEmptyImage,
			},
			ShareVolumePolicy: ShareVolumePolicy{Type: ShareVolumePolicyType(c.ShareVolumePolicy.Type)},
		}
		if p := c.ShareVolumeDevicePolicy; p != nil {
			out[i].ShareVolumeDevicePolicy = &ShareVolumePolicy{Type: ShareVolumePolicyType(p.Type)}
		}
		if c.TransferEnv != nil {
			out[i].TransferEnv = make([]TransferEnvVar, len(c.TransferEnv))
			for j, e := range c.TransferEnv {
				out[i].TransferEnv[j] = TransferEnvVar{
					SourceContainerName: e.SourceContainerName, SourceContainerNameFrom: (*SourceContainerNameSource)(e.SourceContainerNameFrom),
					EnvName: e.EnvName, EnvNames: e.EnvNames,
				}
			}
		}
		if p := c.ResourcesPolicy; p != nil {
			out[i].ResourcesPolicy = &ResourcesPolicy{
				TargetContainersMode: TargetContainersModeType(p.TargetContainersMode), TargetContainersNameRegex: p.TargetContainersNameRegex,
				ResourcesExpr: ResourcesExpr{
					Limits: (*ResourceExprLimits)(p.ResourcesExpr.Limits), Requests: (*ResourceExprRequests)(p.ResourcesExpr.Requests),
				},
			}
		}
	}
	return out
}
