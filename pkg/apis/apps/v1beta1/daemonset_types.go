package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// DefaultDaemonSetBurstReplicas is spec.burstReplicas when unset: at most
// this many pods are created in one pass.
const DefaultDaemonSetBurstReplicas = 250

// DaemonSetPodUnavailableBudgetWait (kruise's condition type): pods wait for a
// PodUnavailableBudget before they are updated in place or deleted; the message names them and
// the budget's reason.
const DaemonSetPodUnavailableBudgetWait appsv1.DaemonSetConditionType = "PodUnavailableBudgetWait"

// DaemonSetUpdateStrategyType says whether a DaemonSet updates its pods itself.
// +enum
type DaemonSetUpdateStrategyType string

const (
	// RollingUpdateDaemonSetStrategyType replaces old pods node by node, as
	// rollingUpdate says (the default).
	RollingUpdateDaemonSetStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteDaemonSetStrategyType updates nothing: a node gets a pod of the
	// new revision only once its old pod is deleted.
	OnDeleteDaemonSetStrategyType DaemonSetUpdateStrategyType = "OnDelete"
)

// DaemonSetRollingUpdateType is how a rolling update replaces the pod of
// one node (JSON: rollingUpdate.rollingUpdateType).
// +enum
type DaemonSetRollingUpdateType string

const (
	// StandardDaemonSetRollingUpdateType deletes the old pod and creates a
	// new one, as the built-in DaemonSet does (the default).
	StandardDaemonSetRollingUpdateType DaemonSetRollingUpdateType = "Standard"
	// InPlaceIfPossibleDaemonSetRollingUpdateType updates the pod in place
	// when only what can change in place changed, and recreates it otherwise.
	InPlaceIfPossibleDaemonSetRollingUpdateType DaemonSetRollingUpdateType = "InPlaceIfPossible"
)

// DaemonSetSpec is the desired state of an Advanced DaemonSet.
//
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.rollingUpdateType) || self.updateStrategy.rollingUpdate.rollingUpdateType != 'InPlaceIfPossible' || !has(self.updateStrategy.rollingUpdate.maxSurge) || (type(self.updateStrategy.rollingUpdate.maxSurge) == int ? self.updateStrategy.rollingUpdate.maxSurge == 0 : self.updateStrategy.rollingUpdate.maxSurge == '0%')",message="updateStrategy.rollingUpdate.maxSurge must be 0 with rollingUpdateType InPlaceIfPossible: an in-place update never adds a second pod on a node"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || (!has(self.updateStrategy.rollingUpdate.maxUnavailable) && !has(self.updateStrategy.rollingUpdate.maxSurge)) || ((has(self.updateStrategy.rollingUpdate.maxUnavailable) && (type(self.updateStrategy.rollingUpdate.maxUnavailable) == int ? self.updateStrategy.rollingUpdate.maxUnavailable != 0 : self.updateStrategy.rollingUpdate.maxUnavailable != '0%')) != (has(self.updateStrategy.rollingUpdate.maxSurge) && (type(self.updateStrategy.rollingUpdate.maxSurge) == int ? self.updateStrategy.rollingUpdate.maxSurge != 0 : self.updateStrategy.rollingUpdate.maxSurge != '0%')))",message="exactly one of updateStrategy.rollingUpdate.maxUnavailable and maxSurge must be non-zero (or leave both unset: 1 and 0): a node's pod is either taken down before its replacement starts or after"
type DaemonSetSpec struct {
	// Selector selects the DaemonSet's pods; it must match the template's
	// labels. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable: the pods it selected would be orphaned"
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the pod run on every eligible node. Schemaless, as in
	// OpenKruise: the API server keeps it as sent.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// UpdateStrategy tunes replacing pods of an old revision. Defaults to
	// {} (type RollingUpdate, rollingUpdate {rollingUpdateType Standard}).
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// MinReadySeconds is how long a pod must be ready, with no container
	// crashing, to count as available. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// BurstReplicas caps the pods created in one pass (number, or percent
	// of desiredNumberScheduled). Defaults to 250.
	// +kubebuilder:default=250
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\""
	// +optional
	BurstReplicas *intstr.IntOrString `json:"burstReplicas,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions are kept.
	// Defaults to 10.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Lifecycle holds the preDelete hook: a pod to be deleted waits in
	// state PreparingDelete until the hook's labels or finalizers are gone.
	// An inPlaceUpdate hook is not supported (as in OpenKruise).
	// +kubebuilder:validation:XValidation:rule="!has(self.inPlaceUpdate)",message="lifecycle.inPlaceUpdate is not supported for DaemonSets (only preDelete is)"
	// +optional
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`

	// ScaleStrategy tunes creating pods on nodes that need one.
	// +optional
	ScaleStrategy *DaemonSetScaleStrategy `json:"scaleStrategy,omitempty"`
}

// DaemonSetScaleStrategy tunes creating pods on nodes that need one.
type DaemonSetScaleStrategy struct {
	// PartitionedScaling: pods for nodes that have none are created only
	// within rollingUpdate.partition, as updated pods are (v1alpha1: the
	// annotation daemonset.kruise.io/progressive-create-pod="true").
	// Defaults to false: every eligible node gets a pod at once.
	// +optional
	PartitionedScaling bool `json:"partitionedScaling,omitempty"`
}

// DaemonSetUpdateStrategy tunes replacing pods of an old revision.
type DaemonSetUpdateStrategy struct {
	// Type says whether pods are updated by the DaemonSet. Defaults to
	// RollingUpdate.
	// +kubebuilder:default=RollingUpdate
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +optional
	Type DaemonSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the rolling update. Defaults to {} (with either
	// type: OnDelete ignores it).
	// +kubebuilder:default={}
	// +optional
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet tunes a rolling update.
type RollingUpdateDaemonSet struct {
	// Type is how each node's old pod is replaced. Defaults to Standard.
	// +kubebuilder:default=Standard
	// +kubebuilder:validation:Enum=Standard;InPlaceIfPossible
	// +optional
	Type DaemonSetRollingUpdateType `json:"rollingUpdateType,omitempty"`

	// MaxUnavailable is how many nodes (number, or percent of
	// desiredNumberScheduled rounded up) may be without an available pod
	// during an update. Unset with maxSurge unset: 1.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many nodes (number, or percent of
	// desiredNumberScheduled rounded up) may run a new pod next to their
	// available old one during an update. Unset: 0.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Selector limits the update to the nodes whose labels it matches.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is how many nodes (number, or percent of
	// desiredNumberScheduled) keep a pod of the old revision; nodes are
	// updated from the end of their name order. Defaults to 0. A number
	// until OpenKruise 1.8; number or percent since 1.9.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// Paused stops updating pods; pods for nodes that need one are still
	// created and pods on nodes no longer eligible still deleted.
	// +optional
	Paused *bool `json:"paused,omitempty"`
}

// DaemonSetStatus is the observed state of an Advanced DaemonSet. Counts
// are of nodes; "updated" pods are of updateRevision.
type DaemonSetStatus struct {
	// CurrentNumberScheduled: nodes that should run the pod and run one.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`
	// NumberMisscheduled: nodes that run the pod but should not.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	NumberMisscheduled int32 `json:"numberMisscheduled"`
	// DesiredNumberScheduled: nodes that should run the pod.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
	// NumberReady: nodes that should run the pod and run it ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	NumberReady int32 `json:"numberReady"`
	// ObservedGeneration is the generation of the spec the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// UpdatedNumberScheduled: nodes that run a pod of updateRevision.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`
	// NumberAvailable: nodes that should run the pod and run it available
	// (ready for minReadySeconds).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	NumberAvailable int32 `json:"numberAvailable,omitempty"`
	// NumberUnavailable: nodes that should run the pod and run none available.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	NumberUnavailable int32 `json:"numberUnavailable,omitempty"`
	// CollisionCount counts revision hash collisions, to name the next one.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// Conditions are those of the built-in DaemonSet.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	Conditions []appsv1.DaemonSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// UpdateRevision is the revision of the current template (the pods'
	// controller-revision-hash label; v1alpha1: daemonSetHash).
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
}

// DaemonSet (Advanced DaemonSet) runs one pod on every eligible node as the
// built-in DaemonSet does, with in-place update, partition, node selector
// for updates and a preDelete hook. This is the storage version; see
// docs/api.md.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=daemon;ads
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desiredNumberScheduled",description="The number of nodes that should run the pod."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.currentNumberScheduled",description="The number of those nodes that run it."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.numberReady",description="The number of those nodes that run it ready."
// +kubebuilder:printcolumn:name="UP-TO-DATE",type="integer",JSONPath=".status.updatedNumberScheduled",description="The number of nodes that run the current revision."
// +kubebuilder:printcolumn:name="AVAILABLE",type="integer",JSONPath=".status.numberAvailable",description="The number of nodes that run it available."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the DaemonSet was created."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of the pod template."
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DaemonSetSpec   `json:"spec,omitempty"`
	Status DaemonSetStatus `json:"status,omitempty"`
}

// DaemonSetList is a list of DaemonSets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DaemonSet `json:"items"`
}
