package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// StatefulSetMaxMinReadySeconds bounds updateStrategy.rollingUpdate.minReadySeconds (OpenKruise's limit).
const StatefulSetMaxMinReadySeconds = 300

// Condition types an Advanced StatefulSet adds to the built-in ones.
const (
	// FailedCreatePod: the controller failed to create a pod.
	FailedCreatePod appsv1.StatefulSetConditionType = "FailedCreatePod"
	// FailedUpdatePod: the controller failed to update a pod.
	FailedUpdatePod appsv1.StatefulSetConditionType = "FailedUpdatePod"
	// PodUnavailableBudgetWait (kruise's): pods wait for a PodUnavailableBudget before they are
	// updated in place or deleted; the message names them and the budget's reason.
	PodUnavailableBudgetWait appsv1.StatefulSetConditionType = "PodUnavailableBudgetWait"
)

// PodUpdateStrategyType is how a rolling update replaces one pod.
// +enum
type PodUpdateStrategyType string

const (
	// RecreatePodUpdateStrategyType deletes the old pod and creates it again (the default).
	RecreatePodUpdateStrategyType PodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossiblePodUpdateStrategyType updates in place when only what can change in place
	// changed, and recreates the pod otherwise.
	InPlaceIfPossiblePodUpdateStrategyType PodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyPodUpdateStrategyType only ever updates in place.
	InPlaceOnlyPodUpdateStrategyType PodUpdateStrategyType = "InPlaceOnly"
)

// PersistentVolumeClaimRetentionPolicyType says what becomes of the claims made from
// volumeClaimTemplates.
// +enum
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the claims (the default).
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the claims.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// VolumeClaimUpdateStrategyType says when claims follow a change of volumeClaimTemplates.
// +enum
type VolumeClaimUpdateStrategyType string

const (
	// OnPVCDeleteVolumeClaimUpdateStrategyType: a claim takes the new template only once it is
	// deleted and made again.
	OnPVCDeleteVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnDelete"
	// OnPodRollingUpdateVolumeClaimUpdateStrategyType: a pod's claims are updated (expanded in
	// place where they can be) as the rolling update reaches the pod.
	OnPodRollingUpdateVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnPodRollingUpdate"
)

// StatefulSetSpec is the desired state of an Advanced StatefulSet: the built-in
// StatefulSet's spec and kruise's fields.
//
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.type) || self.updateStrategy.type != 'OnDelete' || !has(self.updateStrategy.rollingUpdate)",message="updateStrategy.rollingUpdate is only allowed with updateStrategy.type RollingUpdate"
// +kubebuilder:validation:XValidation:rule="(has(self.podManagementPolicy) && self.podManagementPolicy == 'Parallel') || !has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.unorderedUpdate)",message="updateStrategy.rollingUpdate.unorderedUpdate needs podManagementPolicy Parallel: OrderedReady updates in ordinal order"
// +kubebuilder:validation:XValidation:rule="(has(self.podManagementPolicy) && self.podManagementPolicy == 'Parallel') || !has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.maxUnavailable) || (type(self.updateStrategy.rollingUpdate.maxUnavailable) == int && self.updateStrategy.rollingUpdate.maxUnavailable == 1)",message="updateStrategy.rollingUpdate.maxUnavailable other than 1 needs podManagementPolicy Parallel (as in OpenKruise)"
// +kubebuilder:validation:XValidation:rule="(has(self.podManagementPolicy) && self.podManagementPolicy == 'Parallel') || !has(self.scaleStrategy) || !has(self.scaleStrategy.maxUnavailable) || (type(self.scaleStrategy.maxUnavailable) == int && self.scaleStrategy.maxUnavailable == 1)",message="scaleStrategy.maxUnavailable other than 1 needs podManagementPolicy Parallel (as in OpenKruise)"
// +kubebuilder:validation:XValidation:rule="has(self.serviceName) == has(oldSelf.serviceName) && (!has(self.serviceName) || self.serviceName == oldSelf.serviceName)",message="spec.serviceName is immutable: the pods' network identity hangs on it"
// +kubebuilder:validation:XValidation:rule="(has(self.podManagementPolicy) ? self.podManagementPolicy : 'OrderedReady') == (has(oldSelf.podManagementPolicy) ? oldSelf.podManagementPolicy : 'OrderedReady')",message="spec.podManagementPolicy is immutable, as in the built-in StatefulSet"
type StatefulSetSpec struct {
	// Replicas is the number of pods wanted. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods; it must match the template's labels.
	// Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable: the pods it selected would be orphaned"
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the pod template. Schemaless, as in OpenKruise: the API
	// server keeps it as sent.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are claims made for each pod (named
	// <template>-<statefulset>-<ordinal>) and mounted as the volume of the
	// same name. Schemaless, as in OpenKruise.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// VolumeClaimUpdateStrategy says when claims follow a change of
	// volumeClaimTemplates (OpenKruise's gate StatefulSetAutoResizePVCGate).
	// +optional
	VolumeClaimUpdateStrategy VolumeClaimUpdateStrategy `json:"volumeClaimUpdateStrategy,omitempty"`

	// ServiceName is the headless Service that gives each pod its DNS name.
	// Immutable.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// PodManagementPolicy is OrderedReady (one pod at a time, in ordinal
	// order) or Parallel. Defaults to OrderedReady. Immutable.
	// +kubebuilder:default=OrderedReady
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	// +optional
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`

	// UpdateStrategy tunes replacing pods of an old revision. Defaults to
	// {} (type RollingUpdate).
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions are kept.
	// Defaults to 10.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// ReserveOrdinals are ordinals no pod takes: numbers, or ranges
	// "first-last" (both included). Replicas counts the pods that run.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:XValidation:rule="self.all(o, type(o) == int ? (o >= 0 && o <= 2147483647) : size(o) <= 21)",message="every reserveOrdinals entry must be a non-negative 32-bit number or a range such as \"3-5\" (of two numbers of at most 10 digits)"
	// +listType=atomic
	// +optional
	ReserveOrdinals []intstr.IntOrString `json:"reserveOrdinals,omitempty"`

	// Lifecycle holds the hooks around pod creation, in-place update and
	// deletion.
	// +optional
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`

	// ScaleStrategy tunes creating and deleting pods.
	// +optional
	ScaleStrategy *StatefulSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// PersistentVolumeClaimRetentionPolicy says whether the claims made from
	// volumeClaimTemplates go when the set is deleted or scaled down
	// (OpenKruise's gate StatefulSetAutoDeletePVC).
	// +optional
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// Ordinals numbers the pods from ordinals.start rather than 0
	// (OpenKruise's gate StatefulSetStartOrdinal).
	// +optional
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`
}

// VolumeClaimUpdateStrategy says when claims follow a change of volumeClaimTemplates.
type VolumeClaimUpdateStrategy struct {
	// Type is OnDelete or OnPodRollingUpdate.
	// +kubebuilder:validation:Enum=OnDelete;OnPodRollingUpdate
	// +optional
	Type VolumeClaimUpdateStrategyType `json:"type,omitempty"`
}

// StatefulSetUpdateStrategy tunes replacing pods of an old revision.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (the set updates its pods) or OnDelete (a pod
	// takes the new revision only once deleted). Defaults to RollingUpdate.
	// +kubebuilder:default=RollingUpdate
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +optional
	Type appsv1.StatefulSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the rolling update; only with type RollingUpdate.
	// Unset reads as its defaults.
	// +optional
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy tunes a rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition is how many pods stay at the old revision, counting only
	// ordinals not reserved (OpenKruise v1.8's meaning). Defaults to 0.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Partition *int32 `json:"partition,omitempty"`

	// MaxUnavailable is how many pods (number, or percent of replicas
	// rounded up; at least 1) may be unavailable during the update. Other
	// than 1 only with podManagementPolicy Parallel. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 1 && self <= 2147483647) : (self.matches('^[0-9]{1,9}%$') && !self.matches('^0+%$'))",message="must be a positive 32-bit number or a positive percentage such as \"20%\""
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// PodUpdatePolicy is how each old pod is replaced. Defaults to
	// ReCreate. The in-place policies need the readiness gate
	// InPlaceUpdateReady in the pod template.
	// +kubebuilder:default=ReCreate
	// +kubebuilder:validation:Enum=ReCreate;InPlaceIfPossible;InPlaceOnly
	// +optional
	PodUpdatePolicy PodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`

	// Paused stops updating pods (scaling goes on).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// UnorderedUpdate updates pods in priority order rather than by
	// ordinal; only with podManagementPolicy Parallel.
	// +optional
	UnorderedUpdate *UnorderedUpdateStrategy `json:"unorderedUpdate,omitempty"`

	// InPlaceUpdateStrategy tunes in-place updates.
	// +kubebuilder:validation:XValidation:rule="!has(self.imagePreDownloadParallelism) || (type(self.imagePreDownloadParallelism) == int ? (self.imagePreDownloadParallelism >= 0 && self.imagePreDownloadParallelism <= 2147483647) : self.imagePreDownloadParallelism.matches('^[0-9]{1,9}%$'))",message="imagePreDownloadParallelism must be a non-negative 32-bit number or a percentage such as \"20%\""
	// +optional
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`

	// MinReadySeconds is how long an updated pod must be ready before the
	// update goes on, 0 to 300. Defaults to 0.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=300
	// +optional
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
}

// UnorderedUpdateStrategy orders an update by priority rather than by ordinal.
type UnorderedUpdateStrategy struct {
	// PriorityStrategy orders the pods to update: by weights or by an
	// ordered label, not both.
	// +kubebuilder:validation:XValidation:rule="!has(self.weightPriority) || !has(self.orderPriority) || size(self.weightPriority) == 0 || size(self.orderPriority) == 0",message="only one of weightPriority and orderPriority may be set: they are two ways to order the same pods"
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
}

// StatefulSetScaleStrategy tunes creating and deleting pods.
type StatefulSetScaleStrategy struct {
	// MaxUnavailable bounds scaling: no pod is created or deleted while
	// this many (number, or percent of replicas rounded up; at least 1) are
	// unavailable. Other than 1 only with podManagementPolicy Parallel.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 1 && self <= 2147483647) : (self.matches('^[0-9]{1,9}%$') && !self.matches('^0+%$'))",message="must be a positive 32-bit number or a positive percentage such as \"20%\""
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// StatefulSetPersistentVolumeClaimRetentionPolicy says what becomes of the
// claims made from volumeClaimTemplates.
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted applies when the set is deleted. Defaults to Retain.
	// +kubebuilder:default=Retain
	// +kubebuilder:validation:Enum=Retain;Delete
	// +optional
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	// WhenScaled applies to the claims of the pods a scale-down removes.
	// Defaults to Retain.
	// +kubebuilder:default=Retain
	// +kubebuilder:validation:Enum=Retain;Delete
	// +optional
	WhenScaled PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// StatefulSetOrdinals numbers the pods.
type StatefulSetOrdinals struct {
	// Start is the first ordinal: the pods are start … start+replicas-1
	// (reserved ordinals skipped).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Start int32 `json:"start"`
}

// VolumeClaimStatus counts the pods whose claims of one template match it.
type VolumeClaimStatus struct {
	// VolumeClaimName is the name of the template.
	VolumeClaimName string `json:"volumeClaimName"`
	// CompatibleReplicas have claims matching the template.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	CompatibleReplicas int32 `json:"compatibleReplicas"`
	// CompatibleReadyReplicas are those of CompatibleReplicas that are ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	CompatibleReadyReplicas int32 `json:"compatibleReadyReplicas"`
}

// StatefulSetStatus is the observed state of an Advanced StatefulSet.
// Counts are of the pods it owns; "updated" ones are of updateRevision,
// "current" ones of currentRevision.
type StatefulSetStatus struct {
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
	CurrentReplicas int32 `json:"currentReplicas"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// UpdatedReadyReplicas are updated and ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`
	// CurrentRevision is the revision the pods below the partition have.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the revision of the current template.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CollisionCount counts revision hash collisions, to name the next one.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// +optional
	Conditions []appsv1.StatefulSetCondition `json:"conditions,omitempty"`
	// LabelSelector is spec.selector as a string, for the scale subresource (HPA).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// VolumeClaims counts, per volume claim template, the pods whose
	// claims match it.
	// +optional
	VolumeClaims []VolumeClaimStatus `json:"volumeClaims,omitempty"`
}

// StatefulSet is OpenKruise's Advanced StatefulSet: the built-in
// StatefulSet with in-place update, lifecycle hooks, reserved ordinals and
// more. This is the storage version; see docs/api.md.
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=sts;asts
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="The number of pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the StatefulSet was created."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of the pod template."
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StatefulSetSpec   `json:"spec,omitempty"`
	Status StatefulSetStatus `json:"status,omitempty"`
}

// StatefulSetList is a list of Advanced StatefulSets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatefulSet `json:"items"`
}
