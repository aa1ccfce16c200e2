package v1alpha1

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Labels and annotations a UnitedDeployment writes, with OpenKruise's keys.
const (
	// SubSetNameLabelKey on a subset workload, its selector and its pods names the subset.
	SubSetNameLabelKey = "apps.kruise.io/subset-name"
	// SubsetPatchAnnotation on a subset workload records the subset's raw patch.
	SubsetPatchAnnotation = "apps.kruise.io/subset-patch"
	// UnitedDeploymentReservedPodLabel marks, under Adaptive with reserveUnschedulablePods, a pod
	// that could not be scheduled in its subset and is kept while a substitute runs elsewhere.
	UnitedDeploymentReservedPodLabel = "apps.kruise.io/united-deployment-reserved-pod"
)

// UpdateStrategyType names how a UnitedDeployment's subsets are updated.
type UpdateStrategyType string

const (
	// ManualUpdateStrategyType updates each subset up to its partition in manualUpdate.
	ManualUpdateStrategyType UpdateStrategyType = "Manual"
)

// UnitedDeploymentConditionType names a condition of a UnitedDeployment.
type UnitedDeploymentConditionType string

const (
	// SubsetProvisioned: every subset workload exists as the topology says.
	SubsetProvisioned UnitedDeploymentConditionType = "SubsetProvisioned"
	// SubsetUpdated: every subset workload carries the current template.
	SubsetUpdated UnitedDeploymentConditionType = "SubsetUpdated"
	// SubsetFailure: a subset workload could not be created, updated or deleted.
	SubsetFailure UnitedDeploymentConditionType = "SubsetFailure"
	// UnitedDeploymentUpdated: the whole UnitedDeployment runs its latest revision.
	UnitedDeploymentUpdated UnitedDeploymentConditionType = "UnitedDeploymentUpdated"
)

// UnitedDeploymentSpec is one application spread over subsets (zones, node pools): one workload
// per subset, made from one template.
type UnitedDeploymentSpec struct {
	// Replicas is the total over all subsets. When nil, every subset must say its own replicas.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of every subset; the template's labels must match it.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the subset workload: exactly one of its fields is set.
	// +optional
	Template SubsetTemplate `json:"template,omitempty"`

	// Topology lists the subsets and how replicas move between them.
	// +optional
	Topology Topology `json:"topology,omitempty"`

	// UpdateStrategy holds the per-subset partitions.
	// +optional
	UpdateStrategy UnitedDeploymentUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions are kept (default 10).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// SubsetTemplate is the workload each subset runs; exactly one field is set.
type SubsetTemplate struct {
	// StatefulSetTemplate makes each subset a built-in StatefulSet.
	// +optional
	StatefulSetTemplate *StatefulSetTemplateSpec `json:"statefulSetTemplate,omitempty"`
	// AdvancedStatefulSetTemplate makes each subset an Advanced StatefulSet.
	// +optional
	AdvancedStatefulSetTemplate *AdvancedStatefulSetTemplateSpec `json:"advancedStatefulSetTemplate,omitempty"`
	// CloneSetTemplate makes each subset a CloneSet.
	// +optional
	CloneSetTemplate *CloneSetTemplateSpec `json:"cloneSetTemplate,omitempty"`
	// DeploymentTemplate makes each subset a built-in Deployment.
	// +optional
	DeploymentTemplate *DeploymentTemplateSpec `json:"deploymentTemplate,omitempty"`
}

// As in OpenKruise's CRD, the templates' metadata and the built-in kinds' specs are schemaless;
// the validating webhook decodes and checks them (an out-of-range number is refused there).

// StatefulSetTemplateSpec is a StatefulSet's metadata and spec.
type StatefulSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Spec appsv1.StatefulSetSpec `json:"spec"`
}

// AdvancedStatefulSetTemplateSpec is an Advanced StatefulSet's metadata and spec.
type AdvancedStatefulSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              v1beta1.StatefulSetSpec `json:"spec"`
}

// CloneSetTemplateSpec is a CloneSet's metadata and spec.
type CloneSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CloneSetSpec `json:"spec"`
}

// DeploymentTemplateSpec is a Deployment's metadata and spec.
type DeploymentTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Spec appsv1.DeploymentSpec `json:"spec"`
}

// UnitedDeploymentUpdateStrategy says how the subsets take a new template.
type UnitedDeploymentUpdateStrategy struct {
	// Type is Manual (the only type).
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`
	// ManualUpdate holds the partitions.
	// +optional
	ManualUpdate *ManualUpdate `json:"manualUpdate,omitempty"`
}

// ManualUpdate holds, per subset, how many of its pods stay at the old revision.
type ManualUpdate struct {
	// Partitions maps a subset's name to its partition; a missing subset has partition 0.
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= -2147483648 && self[k] <= 2147483647)",message="a partition must be a 32-bit number"
	// +optional
	Partitions map[string]int32 `json:"partitions,omitempty"`
}

// Topology lists the subsets and the schedule strategy.
type Topology struct {
	// Subsets, in order. Their names are unique.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:XValidation:rule="self.all(s, (!has(s.replicas) || type(s.replicas) != int || (s.replicas >= -2147483648 && s.replicas <= 2147483647)) && (!has(s.minReplicas) || type(s.minReplicas) != int || (s.minReplicas >= -2147483648 && s.minReplicas <= 2147483647)) && (!has(s.maxReplicas) || type(s.maxReplicas) != int || (s.maxReplicas >= -2147483648 && s.maxReplicas <= 2147483647)))",message="replicas, minReplicas and maxReplicas must be 32-bit numbers or percentages"
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +optional
	Subsets []Subset `json:"subsets,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// ScheduleStrategy is Fixed (default) or Adaptive.
	// +optional
	ScheduleStrategy UnitedDeploymentScheduleStrategy `json:"scheduleStrategy,omitempty"`
}

// Subset is one domain of the application.
type Subset struct {
	// Name is unique among the subsets and names the subset's workload (`<ud>-<name>-…`).
	Name string `json:"name"`

	// NodeSelectorTerm is ANDed into every required node-affinity term of the subset's pods.
	// +optional
	NodeSelectorTerm corev1.NodeSelectorTerm `json:"nodeSelectorTerm,omitempty"`

	// Tolerations are appended to the subset's pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Replicas is a count or a percentage of spec.replicas; when unset the subset shares what the
	// others leave.
	// +optional
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`

	// MinReplicas is the least the subset gets when spec.replicas is shared by min/max.
	// +optional
	MinReplicas *intstr.IntOrString `json:"minReplicas,omitempty"`

	// MaxReplicas is the most the subset gets; nil means no limit.
	// +optional
	MaxReplicas *intstr.IntOrString `json:"maxReplicas,omitempty"`

	// Patch is a strategic-merge patch applied to the subset workload's pod template, after the
	// node selector term and the tolerations.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Patch runtime.RawExtension `json:"patch,omitempty"`
}

// UnitedDeploymentScheduleStrategyType is Fixed or Adaptive.
// +kubebuilder:validation:Enum=Adaptive;Fixed;""
type UnitedDeploymentScheduleStrategyType string

const (
	// AdaptiveUnitedDeploymentScheduleStrategyType moves replicas from a subset whose pods cannot
	// be scheduled to the next subsets.
	AdaptiveUnitedDeploymentScheduleStrategyType UnitedDeploymentScheduleStrategyType = "Adaptive"
	// FixedUnitedDeploymentScheduleStrategyType keeps each subset's replicas where the topology puts them.
	FixedUnitedDeploymentScheduleStrategyType UnitedDeploymentScheduleStrategyType = "Fixed"
)

// Adaptive scheduling's defaults.
const (
	DefaultRescheduleCriticalDuration      = 30 * time.Second
	DefaultUnschedulableStatusLastDuration = 300 * time.Second
)

// AdaptiveUnitedDeploymentStrategy tunes Adaptive scheduling.
type AdaptiveUnitedDeploymentStrategy struct {
	// RescheduleCriticalSeconds is how long a pod may stay unscheduled before its subset is marked
	// unschedulable (default 30).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RescheduleCriticalSeconds *int32 `json:"rescheduleCriticalSeconds,omitempty"`

	// UnschedulableDuration is how long a subset stays unschedulable before it is tried again
	// (default 300).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	UnschedulableDuration *int32 `json:"unschedulableDuration,omitempty"`

	// ReserveUnschedulablePods keeps unschedulable pods (labelled reserved) while substitutes run in
	// later subsets; CloneSet and Deployment subsets only.
	// +optional
	ReserveUnschedulablePods bool `json:"reserveUnschedulablePods,omitempty"`
}

// UnitedDeploymentScheduleStrategy is the schedule strategy.
type UnitedDeploymentScheduleStrategy struct {
	// Type is Fixed (default) or Adaptive.
	// +optional
	Type UnitedDeploymentScheduleStrategyType `json:"type,omitempty"`
	// Adaptive tunes Adaptive.
	// +optional
	Adaptive *AdaptiveUnitedDeploymentStrategy `json:"adaptive,omitempty"`
}

// IsAdaptive reports whether replicas move away from unschedulable subsets.
func (s *UnitedDeploymentScheduleStrategy) IsAdaptive() bool {
	return s.Type == AdaptiveUnitedDeploymentScheduleStrategyType
}

// ShouldReserveUnschedulablePods reports whether unschedulable pods are kept as reserved.
func (s *UnitedDeploymentScheduleStrategy) ShouldReserveUnschedulablePods() bool {
	return s.IsAdaptive() && s.Adaptive != nil && s.Adaptive.ReserveUnschedulablePods
}

// GetRescheduleCriticalDuration is rescheduleCriticalSeconds or its default.
func (s *UnitedDeploymentScheduleStrategy) GetRescheduleCriticalDuration() time.Duration {
	if s.Adaptive == nil || s.Adaptive.RescheduleCriticalSeconds == nil {
		return DefaultRescheduleCriticalDuration
	}
	return time.Duration(*s.Adaptive.RescheduleCriticalSeconds) * time.Second
}

// GetUnschedulableDuration is unschedulableDuration or its default.
func (s *UnitedDeploymentScheduleStrategy) GetUnschedulableDuration() time.Duration {
	if s.Adaptive == nil || s.Adaptive.UnschedulableDuration == nil {
		return DefaultUnschedulableStatusLastDuration
	}
	return time.Duration(*s.Adaptive.UnschedulableDuration) * time.Second
}

// UnitedDeploymentStatus is what the controller observed.
type UnitedDeploymentStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas counts Ready pods over all subsets.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Replicas counts pods over all subsets, reserved ones excluded.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Replicas int32 `json:"replicas"`
	// UpdatedReplicas counts pods of the update revision.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ReservedPods counts pods kept as reserved.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ReservedPods int32 `json:"reservedPods,omitempty"`
	// UpdatedReadyReplicas counts Ready pods of the update revision.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// CollisionCount disambiguates revision names that collide.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// CurrentRevision is the revision every subset ran when last complete.
	CurrentRevision string `json:"currentRevision"`
	// SubsetReplicas is the replicas the controller gave each subset.
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= -2147483648 && self[k] <= 2147483647)",message="a subset's replicas must be a 32-bit number"
	// +optional
	SubsetReplicas map[string]int32 `json:"subsetReplicas,omitempty"`
	// SubsetStatuses is each subset's state.
	// +optional
	SubsetStatuses []UnitedDeploymentSubsetStatus `json:"subsetStatuses,omitempty"`
	// Conditions of the UnitedDeployment.
	// +optional
	Conditions []UnitedDeploymentCondition `json:"conditions,omitempty"`
	// UpdateStatus is the update in progress.
	// +optional
	UpdateStatus *UpdateStatus `json:"updateStatus,omitempty"`
	// LabelSelector is spec.selector as a string, for the scale subresource.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// GetSubsetStatus returns the status of the named subset, or nil.
func (s *UnitedDeploymentStatus) GetSubsetStatus(subset string) *UnitedDeploymentSubsetStatus {
	for i := range s.SubsetStatuses {
		if s.SubsetStatuses[i].Name == subset {
			return &s.SubsetStatuses[i]
		}
	}
	return nil
}

// UnitedDeploymentCondition is one condition of a UnitedDeployment.
type UnitedDeploymentCondition struct {
	// Type of the condition.
	Type UnitedDeploymentConditionType `json:"type,omitempty"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status,omitempty"`
	// LastTransitionTime is when Status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word reason.
	Reason string `json:"reason,omitempty"`
	// Message is for humans.
	Message string `json:"message,omitempty"`
}

// UpdateStatus is the revision being rolled out and the partitions in force.
type UpdateStatus struct {
	// UpdatedRevision is the revision of the current template.
	// +optional
	UpdatedRevision string `json:"updatedRevision,omitempty"`
	// CurrentPartitions is the partition given to each subset.
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= -2147483648 && self[k] <= 2147483647)",message="a partition must be a 32-bit number"
	// +optional
	CurrentPartitions map[string]int32 `json:"currentPartitions,omitempty"`
}

// UnitedDeploymentSubsetStatus is one subset's state.
type UnitedDeploymentSubsetStatus struct {
	// Name of the subset.
	// +optional
	Name string `json:"name,omitempty"`
	// Replicas counts the subset's pods.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas counts the subset's Ready pods.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Partition is the subset workload's partition.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Partition int32 `json:"partition,omitempty"`
	// ReservedPods counts the subset's reserved pods.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ReservedPods int32 `json:"reservedPods,omitempty"`
	// Conditions of the subset (Schedulable).
	// +optional
	Conditions []UnitedDeploymentSubsetCondition `json:"conditions,omitempty"`
}

// GetCondition returns a copy of the condition of the given type, or nil.
func (s *UnitedDeploymentSubsetStatus) GetCondition(condType UnitedDeploymentSubsetConditionType) *UnitedDeploymentSubsetCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == condType {
			c := s.Conditions[i]
			return &c
		}
	}
	return nil
}

// SetCondition sets a condition, keeping its transition time while status and reason stay.
func (s *UnitedDeploymentSubsetStatus) SetCondition(condType UnitedDeploymentSubsetConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type != condType {
			continue
		}
		if c.Status == status && c.Reason == reason {
			return
		}
		c.Status, c.Reason, c.Message, c.LastTransitionTime = status, reason, message, now
		return
	}
	s.Conditions = append(s.Conditions, UnitedDeploymentSubsetCondition{
		Type: condType, Status: status, Reason: reason, Message: message, LastTransitionTime: now,
	})
}

// UnitedDeploymentSubsetConditionType names a subset condition.
type UnitedDeploymentSubsetConditionType string

const (
	// UnitedDeploymentSubsetSchedulable is False while the subset's pods cannot be scheduled.
	UnitedDeploymentSubsetSchedulable UnitedDeploymentSubsetConditionType = "Schedulable"
)

// UnitedDeploymentSubsetCondition is one condition of a subset.
type UnitedDeploymentSubsetCondition struct {
	Type               UnitedDeploymentSubsetConditionType `json:"type"`
	Status             corev1.ConditionStatus              `json:"status"`
	LastTransitionTime metav1.Time                         `json:"lastTransitionTime,omitempty"`
	Reason             string                              `json:"reason,omitempty"`
	Message            string                              `json:"message,omitempty"`
}

// UnitedDeployment runs one application as one workload per subset (zone, node pool).
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=ud
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="The number of pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods of the update revision."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of Ready pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type UnitedDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UnitedDeploymentSpec   `json:"spec,omitempty"`
	Status UnitedDeploymentStatus `json:"status,omitempty"`
}

// UnitedDeploymentList is a list of UnitedDeployments.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type UnitedDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UnitedDeployment `json:"items"`
}
