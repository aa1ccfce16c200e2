package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Well-known keys of CloneSets and their pods and claims (OpenKruise's).
const (
	// CloneSetInstanceID labels a CloneSet's pod and the claims made for it
	// from volumeClaimTemplates with the id they share (the pod is named
	// <cloneset>-<id>), so that a claim outlives its pod and is found again.
	CloneSetInstanceID = "apps.kruise.io/cloneset-instance-id"
	// SpecifiedDeleteKey on a pod (any value) asks its CloneSet to delete it
	// (and replace it while the replica count stands).
	SpecifiedDeleteKey = "apps.kruise.io/specified-delete"
	// CloneSetScalingExcludePreparingDeleteKey set to "true" on a CloneSet
	// counts its replicas without the pods in lifecycle state
	// PreparingDelete (v1beta1: scaleStrategy.excludePreparingDelete).
	CloneSetScalingExcludePreparingDeleteKey = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"
	// DefaultCloneSetMaxUnavailable is updateStrategy.maxUnavailable when unset.
	DefaultCloneSetMaxUnavailable = "20%"
)

// CloneSetUpdateStrategyType says whether a CloneSet updates pods itself.
// +enum
type CloneSetUpdateStrategyType string

const (
	// RollingUpdateCloneSetUpdateStrategyType updates old pods in batches, as rollingUpdate says
	// (the default).
	RollingUpdateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteCloneSetUpdateStrategyType updates nothing: a pod gets the new revision only when it is
	// deleted and replaced.
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// CloneSetPodUpdateStrategyType is how a rolling update replaces one pod
// (v1alpha1's updateStrategy.type, but for OnDelete).
// +enum
type CloneSetPodUpdateStrategyType string

const (
	// RecreateCloneSetPodUpdateStrategyType deletes the old pod and creates a new one (the default).
	RecreateCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetPodUpdateStrategyType updates in place when only what can change in
	// place changed, and recreates the pod otherwise.
	InPlaceIfPossibleCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetPodUpdateStrategyType only ever updates in place.
	InPlaceOnlyCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceOnly"
)

// CloneSetSpec is the desired state of a CloneSet.
//
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || self.progressDeadlineSeconds == 2147483647 || self.progressDeadlineSeconds > (has(self.minReadySeconds) ? self.minReadySeconds : 0)",message="progressDeadlineSeconds must be greater than minReadySeconds (or 2147483647, no deadline): a pod cannot count as progress before it has been ready for minReadySeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.podUpdatePolicy) || self.updateStrategy.rollingUpdate.podUpdatePolicy != 'InPlaceOnly' || !has(self.updateStrategy.rollingUpdate.maxSurge) || (type(self.updateStrategy.rollingUpdate.maxSurge) == int ? self.updateStrategy.rollingUpdate.maxSurge == 0 : (self.updateStrategy.rollingUpdate.maxSurge == '0%' || (has(self.replicas) && self.replicas == 0)))",message="updateStrategy.rollingUpdate.maxSurge must be 0 with podUpdatePolicy InPlaceOnly: an in-place update never creates extra pods"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || (has(self.replicas) && self.replicas == 0) || !has(self.updateStrategy.rollingUpdate.maxUnavailable) || (type(self.updateStrategy.rollingUpdate.maxUnavailable) == int ? self.updateStrategy.rollingUpdate.maxUnavailable != 0 : self.updateStrategy.rollingUpdate.maxUnavailable != '0%') || (has(self.updateStrategy.rollingUpdate.maxSurge) && (type(self.updateStrategy.rollingUpdate.maxSurge) == int ? self.updateStrategy.rollingUpdate.maxSurge != 0 : self.updateStrategy.rollingUpdate.maxSurge != '0%'))",message="updateStrategy.rollingUpdate.maxUnavailable and maxSurge cannot both be 0: the update could neither take a pod down nor add one, and would never progress"
type CloneSetSpec struct {
	// Replicas is the number of pods wanted. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the CloneSet's pods; it must match the template's
	// labels (checked by the webhook). Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable: the pods it selected would be orphaned"
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the pod template. Schemaless, as in OpenKruise: the API
	// server keeps it as sent, the webhook validates it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are claims made for each pod (named
	// <template>-<cloneset>-<instance id>) and mounted as the volume of the
	// same name. Schemaless, as in OpenKruise.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ScaleStrategy tunes creating and deleting pods.
	// +optional
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// UpdateStrategy tunes replacing pods of an old revision. Defaults to
	// {} (type RollingUpdate, rollingUpdate {podUpdatePolicy ReCreate,
	// partition 0, maxUnavailable 20%, maxSurge 0}).
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions are kept.
	// Defaults to 10.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// MinReadySeconds is how long a pod must be ready, with no container
	// crashing, to count as available. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// Lifecycle holds the hooks around pod creation, in-place update and
	// deletion.
	// +optional
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`

	// ProgressDeadlineSeconds: once the CloneSet has not progressed (paused
	// time excluded) for this long, condition Progressing turns False with
	// reason ProgressDeadlineExceeded. Unset: not tracked; 2147483647: no
	// deadline. Must be greater than minReadySeconds.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// CloneSetScaleStrategy tunes creating and deleting pods.
type CloneSetScaleStrategy struct {
	// PodsToDelete names pods to delete (and replace while replicas stands).
	// The controller drops names of pods that no longer exist.
	// +listType=atomic
	// +optional
	PodsToDelete []string `json:"podsToDelete,omitempty"`

	// MaxUnavailable bounds scaling up: no new pod is created while this
	// many (number, or percent of replicas) are unavailable. Unset: no bound.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// EnablePVCReuse: a pod's replacement reuses the claims the pod left.
	// Defaults to false, unlike v1alpha1's disablePVCReuse (its inverse),
	// whose default reuses them.
	// +kubebuilder:default=false
	// +optional
	EnablePVCReuse bool `json:"enablePVCReuse"` // false too, as OpenKruise's master: see strategiesToBeta

	// ExcludePreparingDelete counts replicas without the pods in lifecycle
	// state PreparingDelete (v1alpha1: the label
	// apps.kruise.io/cloneset-scaling-exclude-preparing-delete=true).
	// +optional
	ExcludePreparingDelete bool `json:"excludePreparingDelete,omitempty"`
}

// CloneSetUpdateStrategy tunes replacing pods of an old revision.
type CloneSetUpdateStrategy struct {
	// Type says whether pods are updated by the CloneSet. Defaults to
	// RollingUpdate.
	// +kubebuilder:default=RollingUpdate
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +optional
	Type CloneSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the rolling update. Defaults to {} (with either
	// type: OnDelete ignores it).
	// +kubebuilder:default={}
	// +optional
	RollingUpdate *RollingUpdateCloneSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateCloneSetStrategy tunes a rolling update.
type RollingUpdateCloneSetStrategy struct {
	// PodUpdatePolicy is how each old pod is replaced. Defaults to ReCreate.
	// +kubebuilder:default=ReCreate
	// +kubebuilder:validation:Enum=ReCreate;InPlaceIfPossible;InPlaceOnly
	// +optional
	PodUpdatePolicy CloneSetPodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`

	// Partition is how many pods (number, or percent of replicas rounded
	// up) stay at the old revision. Defaults to 0.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable is how many pods (number, or percent of replicas;
	// rounded up, or down when maxSurge > 0) may be unavailable during an
	// update. Defaults to 20%.
	// +kubebuilder:default="20%"
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many pods (number, or percent of replicas rounded up)
	// may be created above replicas during an update or a specified delete.
	// Defaults to 0.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 2147483647) : self.matches('^[0-9]{1,9}%$')",message="must be a non-negative 32-bit number or a percentage such as \"20%\" (a number in quotes is refused, as OpenKruise refuses it)"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Paused stops updating pods (scaling goes on).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// PriorityStrategy orders the pods to update: by weights or by an
	// ordered label, not both.
	// +kubebuilder:validation:XValidation:rule="!has(self.weightPriority) || !has(self.orderPriority) || size(self.weightPriority) == 0 || size(self.orderPriority) == 0",message="only one of weightPriority and orderPriority may be set: they are two ways to order the same pods"
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads the pods matching each term over the update.
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0)",message="every scatterStrategy term needs a key: a term without one matches no label"
	// +optional
	ScatterStrategy pub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`

	// InPlaceUpdateStrategy tunes in-place updates, and image pre-download
	// (v1alpha1: the annotations apps.kruise.io/image-predownload-*).
	// +kubebuilder:validation:XValidation:rule="!has(self.imagePreDownloadParallelism) || (type(self.imagePreDownloadParallelism) == int ? (self.imagePreDownloadParallelism >= 0 && self.imagePreDownloadParallelism <= 2147483647) : self.imagePreDownloadParallelism.matches('^[0-9]{1,9}%$'))",message="imagePreDownloadParallelism must be a non-negative 32-bit number or a percentage such as \"20%\""
	// +optional
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
}

// CloneSetConditionType is a kind of CloneSet condition.
type CloneSetConditionType string

const (
	// CloneSetConditionFailedScale: the controller failed to create or delete pods or claims.
	CloneSetConditionFailedScale CloneSetConditionType = "FailedScale"
	// CloneSetConditionFailedUpdate: the controller failed to update pods.
	CloneSetConditionFailedUpdate CloneSetConditionType = "FailedUpdate"
	// CloneSetConditionTypeProgressing: whether the CloneSet makes progress (progressDeadlineSeconds).
	CloneSetConditionTypeProgressing CloneSetConditionType = "Progressing"
	// CloneSetConditionPodUnavailableBudgetWait (kruise's): pods wait for a PodUnavailableBudget
	// before they are updated in place or deleted; the message names them and the budget's reason.
	CloneSetConditionPodUnavailableBudgetWait CloneSetConditionType = "PodUnavailableBudgetWait"
)

// CloneSetConditionReason is the reason of condition Progressing.
type CloneSetConditionReason string

const (
	// CloneSetProgressDeadlineExceeded: no progress within progressDeadlineSeconds.
	CloneSetProgressDeadlineExceeded CloneSetConditionReason = "ProgressDeadlineExceeded"
	// CloneSetProgressPaused: updateStrategy.paused is set.
	CloneSetProgressPaused CloneSetConditionReason = "CloneSetPaused"
	// CloneSetProgressUpdated: pods are being updated.
	CloneSetProgressUpdated CloneSetConditionReason = "CloneSetUpdated"
	// CloneSetProgressPartitionAvailable: the pods outside the partition are updated and available.
	CloneSetProgressPartitionAvailable CloneSetConditionReason = "ProgressPartitionAvailable"
	// CloneSetAvailable: every pod is updated and available.
	CloneSetAvailable CloneSetConditionReason = "CloneSetAvailable"
)

// CloneSetCondition is one observation of a CloneSet's state.
type CloneSetCondition struct {
	Type   CloneSetConditionType  `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// CloneSetStatus is the observed state of a CloneSet. Counts are of the
// pods the CloneSet owns; "updated" ones are of updateRevision.
type CloneSetStatus struct {
	// ObservedGeneration is the generation of the spec the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Replicas int32 `json:"replicas"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas have been ready for minReadySeconds.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	AvailableReplicas int32 `json:"availableReplicas"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`
	// ExpectedUpdatedReplicas is replicas minus partition.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`
	// UpdateRevision is the revision of the current template.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CurrentRevision is the revision every pod had when last all did.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// CollisionCount counts revision hash collisions, to name the next one.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// +optional
	Conditions []CloneSetCondition `json:"conditions,omitempty"`
	// LabelSelector is spec.selector as a string, for the scale subresource (HPA).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CloneSet keeps a number of identical pods, updating them in place where
// it can. This is the storage version; see docs/api.md.
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=clone
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="UPDATED_READY",type="integer",JSONPath=".status.updatedReadyReplicas",description="The number of pods updated and ready."
// +kubebuilder:printcolumn:name="UPDATED_AVAILABLE",type="integer",JSONPath=".status.updatedAvailableReplicas",description="The number of pods updated and available."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.replicas",description="The number of pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the CloneSet was created."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of the pod template."
// +kubebuilder:printcolumn:name="SELECTOR",type="string",priority=1,JSONPath=".status.labelSelector",description="The pod selector."
type CloneSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CloneSetSpec   `json:"spec,omitempty"`
	Status CloneSetStatus `json:"status,omitempty"`
}

// CloneSetList is a list of CloneSets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type CloneSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloneSet `json:"items"`
}
