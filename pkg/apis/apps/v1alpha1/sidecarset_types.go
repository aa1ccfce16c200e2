package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Well-known keys of SidecarSets (OpenKruise's).
const (
	// SidecarSetCustomVersionLabel on a SidecarSet is its custom version
	// (v1beta1: spec.customVersion), copied onto its ControllerRevisions so
	// that injectionStrategy.revision can name a version rather than a
	// revision.
	SidecarSetCustomVersionLabel = "apps.kruise.io/sidecarset-custom-version"
	// SidecarSetCanaryAnnotation on a SidecarSet (any value) makes it a
	// canary of the SidecarSet named by SidecarSetBaseAnnotation: where both
	// select a pod, the canary is injected instead of its base.
	SidecarSetCanaryAnnotation = "apps.kruise.io/sidecarset-canary"
	// SidecarSetBaseAnnotation names the base SidecarSet of a canary one.
	SidecarSetBaseAnnotation = "apps.kruise.io/sidecarset-base"
	// DefaultSidecarSetMaxUnavailable is updateStrategy.maxUnavailable when unset.
	DefaultSidecarSetMaxUnavailable = 1
)

// SidecarSetSpec is the desired state of a SidecarSet.
//
// +kubebuilder:validation:XValidation:rule="!has(self.__namespace__) || size(self.__namespace__) == 0 || !has(self.namespaceSelector)",message="spec.namespace and spec.namespaceSelector cannot be used together: choose the namespaces by name or by label"
// +kubebuilder:validation:XValidation:rule="has(self.selector) && ((has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0))",message="spec.selector must select something: a SidecarSet without one would be injected into every pod"
// +kubebuilder:validation:XValidation:rule="!has(self.namespaceSelector) || (has(self.namespaceSelector.matchLabels) && size(self.namespaceSelector.matchLabels) > 0) || (has(self.namespaceSelector.matchExpressions) && size(self.namespaceSelector.matchExpressions) > 0)",message="spec.namespaceSelector, when set, must select something (leave it out to match every namespace)"
// +kubebuilder:validation:XValidation:rule="(has(self.initContainers) && size(self.initContainers) > 0) || (has(self.containers) && size(self.containers) > 0)",message="a SidecarSet needs at least one of initContainers and containers: it would inject nothing"
type SidecarSetSpec struct {
	// Selector selects the pods to inject into. It must select something.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Namespace, if set, is the only namespace of the pods to inject into
	// (v1beta1: a namespaceSelector on kubernetes.io/metadata.name). Not
	// with namespaceSelector.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// NamespaceSelector selects the namespaces of the pods to inject into.
	// Unset (and no namespace): every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// InitContainers are injected into a pod when it is created, and only
	// then. One with restartPolicy Always is a native sidecar.
	// podInjectPolicy defaults to AfterAppContainer here.
	// +optional
	InitContainers []SidecarContainer `json:"initContainers,omitempty"`

	// Containers are injected into a pod when it is created and upgraded
	// by the update strategy. podInjectPolicy defaults to
	// BeforeAppContainer here.
	// +optional
	Containers []SidecarContainer `json:"containers,omitempty"`

	// Volumes are added to the pod for the sidecars to mount (merged with
	// the pod's by name). Schemaless, as in OpenKruise: the webhook
	// validates them.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// UpdateStrategy tunes upgrading the sidecars of injected pods.
	// Defaults to {} (type RollingUpdate, partition 0, maxUnavailable 1).
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// InjectionStrategy tunes injecting into new pods.
	// +optional
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

	// ImagePullSecrets are added to the pod for the sidecars' images.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions are kept.
	// Defaults to 10.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// PatchPodMetadata are annotations written on the pods injected into
	// (and, but with policy Retain, on the pods upgraded in place).
	// +kubebuilder:validation:XValidation:rule="self.all(p, has(p.annotations) && size(p.annotations) > 0)",message="every patchPodMetadata entry needs annotations: an entry without any patches nothing"
	// +optional
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// SidecarSetPatchPolicyType is how a SidecarSet's pod annotation meets one
// the pod has.
type SidecarSetPatchPolicyType string

const (
	// SidecarSetRetainPatchPolicy keeps the pod's value, and patches only at
	// injection (the default).
	SidecarSetRetainPatchPolicy SidecarSetPatchPolicyType = "Retain"
	// SidecarSetOverwritePatchPolicy replaces the pod's value, at injection
	// and at in-place upgrades.
	SidecarSetOverwritePatchPolicy SidecarSetPatchPolicyType = "Overwrite"
	// SidecarSetMergePatchJsonPatchPolicy merges the value, a JSON object,
	// into the pod's as a JSON merge patch, so that several SidecarSets can
	// share one annotation.
	SidecarSetMergePatchJsonPatchPolicy SidecarSetPatchPolicyType = "MergePatchJson"
)

// SidecarSetPatchPodMetadata is a set of annotations written on pods.
type SidecarSetPatchPodMetadata struct {
	// Annotations to write.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// PatchPolicy is how they meet the pod's. Defaults to Retain.
	// +kubebuilder:default=Retain
	// +optional
	PatchPolicy SidecarSetPatchPolicyType `json:"patchPolicy,omitempty"`
}

// SidecarSetInjectionStrategy tunes injecting into new pods.
type SidecarSetInjectionStrategy struct {
	// Paused stops injecting into new pods; pods injected already are still
	// upgraded.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Revision injects a chosen revision rather than the latest.
	// +kubebuilder:validation:XValidation:rule="has(self.customVersion) || has(self.revisionName)",message="injectionStrategy.revision needs customVersion or revisionName: it names no revision otherwise"
	// +optional
	Revision *SidecarSetInjectRevision `json:"revision,omitempty"`
}

// SidecarSetInjectRevision names the revision to inject.
type SidecarSetInjectRevision struct {
	// CustomVersion names the revision by the SidecarSet's label
	// apps.kruise.io/sidecarset-custom-version at the time.
	// +optional
	CustomVersion *string `json:"customVersion,omitempty"`
	// RevisionName names a ControllerRevision of the SidecarSet.
	// +optional
	RevisionName *string `json:"revisionName,omitempty"`
	// Policy is when the named revision is injected. Defaults to Always.
	// +kubebuilder:validation:Enum=Always;Partial
	// +kubebuilder:default=Always
	// +optional
	Policy SidecarSetInjectRevisionPolicy `json:"policy,omitempty"`
}

// SidecarSetInjectRevisionPolicy is when the named revision is injected.
type SidecarSetInjectRevisionPolicy string

const (
	// AlwaysSidecarSetInjectRevisionPolicy injects the named revision into
	// every new pod but those updateStrategy.selector selects.
	AlwaysSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Always"
	// PartialSidecarSetInjectRevisionPolicy injects the named revision into
	// some new pods and the latest into the others, as updateStrategy's
	// paused, selector and partition (a percentage: the share of new pods
	// kept at the named revision; a number counts as 0%) say.
	PartialSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Partial"
)

// SidecarSetUpdateStrategy tunes upgrading the sidecars of injected pods.
//
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type != 'RollingUpdate') || !has(self.selector) || !has(self.partition) || (type(self.partition) == int && self.partition == 0)",message="updateStrategy.partition and updateStrategy.selector cannot be used together: choose the pods to upgrade by count or by label"
type SidecarSetUpdateStrategy struct {
	// Type is RollingUpdate or NotUpdate (only new pods get the new
	// sidecars). Defaults to RollingUpdate.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type SidecarSetUpdateStrategyType `json:"type,omitempty"`

	// Paused stops upgrading pods (and, with injectionStrategy.revision
	// policy Partial, decides which revision new pods get).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Selector, if set, upgrades only the pods it selects (and, with
	// injectionStrategy.revision, gives them the latest revision at
	// injection). Not with partition.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is how many matched pods (number, or percent rounded up)
	// stay at old revisions. Defaults to 0. Not with selector.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable is how many matched pods (number, or percent rounded
	// up) may be unavailable during the upgrade. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// PriorityStrategy orders the pods to upgrade: by weights or by an
	// ordered label, not both.
	// +kubebuilder:validation:XValidation:rule="!has(self.weightPriority) || !has(self.orderPriority) || size(self.weightPriority) == 0 || size(self.orderPriority) == 0",message="only one of weightPriority and orderPriority may be set: they are two ways to order the same pods"
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads the pods matching each term over the upgrade.
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0)",message="every scatterStrategy term needs a key: a term without one matches no label"
	// +optional
	ScatterStrategy pub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
}

// SidecarSetUpdateStrategyType says whether injected pods are upgraded.
type SidecarSetUpdateStrategyType string

const (
	// NotUpdateSidecarSetStrategyType leaves injected pods as they are.
	NotUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "NotUpdate"
	// RollingUpdateSidecarSetStrategyType upgrades them in place, a few at a
	// time (the default).
	RollingUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "RollingUpdate"
)

// SidecarSetStatus is the observed state of a SidecarSet. Counts are of the
// pods it matches.
type SidecarSetStatus struct {
	// ObservedGeneration is the generation of the spec the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MatchedPods are the pods the SidecarSet selects and was injected into.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	MatchedPods int32 `json:"matchedPods"`
	// UpdatedPods have the latest sidecars.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	UpdatedPods int32 `json:"updatedPods"`
	// ReadyPods are ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	ReadyPods int32 `json:"readyPods"`
	// UpdatedReadyPods are updated and ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	UpdatedReadyPods int32 `json:"updatedReadyPods,omitempty"`
	// LatestRevision names the ControllerRevision of the current spec.
	// +optional
	LatestRevision string `json:"latestRevision,omitempty"`
	// CollisionCount counts revision hash collisions, to name the next one.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
}

// SidecarSet injects sidecar containers into the pods it selects, and
// upgrades them in place. v1beta1 is the storage version; see docs/api.md.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="MATCHED",type="integer",JSONPath=".status.matchedPods",description="The number of pods matched."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedPods",description="The number of pods matched and updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyPods",description="The number of pods matched and ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the SidecarSet was created."
type SidecarSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SidecarSetSpec   `json:"spec,omitempty"`
	Status SidecarSetStatus `json:"status,omitempty"`
}

// SidecarSetList is a list of SidecarSets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SidecarSet `json:"items"`
}
