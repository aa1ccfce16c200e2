package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Annotations a WorkloadSpread reads or writes, with OpenKruise's keys.
const (
	// MatchedWorkloadSpreadAnnotation on a pod records, as the JSON of InjectWorkloadSpread, the
	// WorkloadSpread and subset the pod was placed in.
	MatchedWorkloadSpreadAnnotation = "apps.kruise.io/matched-workloadspread"
	// PodDeletionCostAnnotation is the built-in controllers' (and CloneSet's) scale-in order: pods
	// with a lower cost go first. The WorkloadSpread controller writes it so that scale-in removes
	// the pods of over-full and later subsets first.
	PodDeletionCostAnnotation = corev1.PodDeletionCost
	// WorkloadSpreadIgnorePatchExistingPodsAnnotation, "true" on a WorkloadSpread, adopts pods that
	// existed before it without writing its subsets' patch metadata onto them.
	WorkloadSpreadIgnorePatchExistingPodsAnnotation = "workloadspread.kruise.io/ignore-patch-existing-pods-metadata"
)

// InjectWorkloadSpread is the value of MatchedWorkloadSpreadAnnotation.
type InjectWorkloadSpread struct {
	// Name is the WorkloadSpread's name.
	Name string `json:"name"`
	// Subset is the subset's name.
	Subset string `json:"subset"`
	// UID is the key the pod was recorded under in creatingPods when it had no name at admission
	// (generateName); empty otherwise.
	UID string `json:"uid,omitempty"`
}

// WorkloadSpreadSpec names a workload and the subsets (zones, node pools, capacity types) its pods
// are spread over, in order.
type WorkloadSpreadSpec struct {
	// TargetReference is the workload whose pods are spread, in the WorkloadSpread's namespace.
	// Its group, kind and name cannot change.
	TargetReference *TargetReference `json:"targetRef"`

	// TargetFilter narrows the spread to some of the workload's pods and says how many replicas
	// they number (for workloads with several pod roles).
	// +optional
	TargetFilter *TargetFilter `json:"targetFilter,omitempty"`

	// Subsets are filled in order: a new pod goes to the first subset that is schedulable and has
	// room.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:XValidation:rule="self.all(s, !has(s.maxReplicas) || type(s.maxReplicas) != int || (s.maxReplicas >= 0 && s.maxReplicas <= 2147483647))",message="maxReplicas must be a non-negative 32-bit number or a percentage such as \"34%\""
	Subsets []WorkloadSpreadSubset `json:"subsets" patchStrategy:"merge" patchMergeKey:"name"`

	// ScheduleStrategy is Fixed (a pod stays in the subset it was given) or Adaptive (a pod that
	// cannot be scheduled in its subset is recreated in the next one).
	// +optional
	ScheduleStrategy WorkloadSpreadScheduleStrategy `json:"scheduleStrategy,omitempty"`
}

// TargetReference names a workload by apiVersion, kind and name.
type TargetReference struct {
	// APIVersion is the workload's API group and version.
	APIVersion string `json:"apiVersion"`
	// Kind is the workload's kind.
	Kind string `json:"kind"`
	// Name is the workload's name.
	Name string `json:"name"`
}

// TargetFilter selects some of a workload's pods, for workloads whose pods play several roles
// (a training job's workers and parameter servers).
type TargetFilter struct {
	// Selector picks the pods the spread manages among the workload's pods.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// ReplicasPathList are dot paths into the workload object (numeric segments index lists) whose
	// integer values, summed, are the replicas the percentages of maxReplicas refer to.
	// +optional
	ReplicasPathList []string `json:"replicasPathList,omitempty"`
}

// WorkloadSpreadScheduleStrategyType is how a pod that cannot be scheduled in its subset is treated.
// +kubebuilder:validation:Enum=Adaptive;Fixed;""
type WorkloadSpreadScheduleStrategyType string

// The schedule strategies.
const (
	// AdaptiveWorkloadSpreadScheduleStrategyType recreates a pod that stays unschedulable in its
	// subset (for rescheduleCriticalSeconds) in the next subset, and marks its subset
	// unschedulable for a while.
	AdaptiveWorkloadSpreadScheduleStrategyType WorkloadSpreadScheduleStrategyType = "Adaptive"
	// FixedWorkloadSpreadScheduleStrategyType keeps a pod in its subset (the default).
	FixedWorkloadSpreadScheduleStrategyType WorkloadSpreadScheduleStrategyType = "Fixed"
)

// WorkloadSpreadScheduleStrategy selects and tunes the schedule strategy.
type WorkloadSpreadScheduleStrategy struct {
	// Type is Fixed (the default when empty) or Adaptive.
	// +optional
	Type WorkloadSpreadScheduleStrategyType `json:"type,omitempty"`

	// Adaptive tunes the Adaptive strategy.
	// +optional
	Adaptive *AdaptiveWorkloadSpreadStrategy `json:"adaptive,omitempty"`
}

// AdaptiveWorkloadSpreadStrategy tunes the Adaptive strategy.
type AdaptiveWorkloadSpreadStrategy struct {
	// DisableSimulationSchedule is accepted for compatibility; as in OpenKruise it changes nothing.
	// +optional
	DisableSimulationSchedule bool `json:"disableSimulationSchedule,omitempty"`

	// RescheduleCriticalSeconds is how long a pod may stay unschedulable in its subset before it is
	// recreated in the next one. Unset or 0: pods are never moved.
	// +optional
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	RescheduleCriticalSeconds *int32 `json:"rescheduleCriticalSeconds,omitempty"`
}

// WorkloadSpreadSubset is one place pods may go: the nodes a term selects, and at most
// maxReplicas pods.
type WorkloadSpreadSubset struct {
	// Name identifies the subset; unique within the WorkloadSpread.
	Name string `json:"name"`

	// RequiredNodeSelectorTerm is added to the pod's required node affinity (ANDed with each of
	// the pod's own terms).
	// +optional
	RequiredNodeSelectorTerm *corev1.NodeSelectorTerm `json:"requiredNodeSelectorTerm,omitempty"`

	// PreferredNodeSelectorTerms are appended to the pod's preferred node affinity.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.weight <= 2147483647 && p.weight >= -2147483648)",message="weight must be a 32-bit number"
	PreferredNodeSelectorTerms []corev1.PreferredSchedulingTerm `json:"preferredNodeSelectorTerms,omitempty"`

	// Tolerations are appended to the pod's tolerations.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// MaxReplicas is how many pods the subset takes: a count, or a percentage of the workload's
	// replicas rounded up. Unset: no limit.
	// +optional
	MaxReplicas *intstr.IntOrString `json:"maxReplicas,omitempty"`

	// Patch is a strategic merge patch applied to the pod (labels, annotations, container
	// resources, env).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Patch runtime.RawExtension `json:"patch,omitempty"`
}

// WorkloadSpreadStatus is the ledger of each subset's pods.
type WorkloadSpreadStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// SubsetStatuses are the subsets' counts, in spec order, over all the workload's pods.
	// +optional
	SubsetStatuses []WorkloadSpreadSubsetStatus `json:"subsetStatuses,omitempty"`

	// VersionedSubsetStatuses are the subsets' counts per pod version (pod-template-hash, or the
	// controller revision), so that pods of a new version are spread like the old ones during a
	// rolling update with surge.
	// +optional
	VersionedSubsetStatuses map[string][]WorkloadSpreadSubsetStatus `json:"versionedSubsetStatuses,omitempty"`
}

// WorkloadSpreadSubsetConditionType is a kind of subset condition.
type WorkloadSpreadSubsetConditionType string

// SubsetSchedulable is False while the Adaptive strategy has found the subset without capacity.
const SubsetSchedulable WorkloadSpreadSubsetConditionType = "Schedulable"

// WorkloadSpreadSubsetCondition is one condition of a subset.
type WorkloadSpreadSubsetCondition struct {
	// Type of the condition.
	Type WorkloadSpreadSubsetConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word CamelCase reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says why, for people.
	// +optional
	Message string `json:"message,omitempty"`
}

// WorkloadSpreadSubsetStatus counts one subset's pods.
type WorkloadSpreadSubsetStatus struct {
	// Name is the subset's name.
	Name string `json:"name"`

	// Replicas is how many active pods are in the subset.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Replicas int32 `json:"replicas"`

	// Conditions of the subset.
	// +optional
	Conditions []WorkloadSpreadSubsetCondition `json:"conditions,omitempty"`

	// MissingReplicas is how many more pods the subset takes; -1 means no limit.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	MissingReplicas int32 `json:"missingReplicas"`

	// CreatingPods are pods admitted into the subset that the controller has not seen yet, by pod
	// name (or by the key in the pod's annotation when it had no name), with the admission time.
	// +optional
	CreatingPods map[string]metav1.Time `json:"creatingPods,omitempty"`

	// DeletingPods are pods of the subset whose deletion was admitted but that the controller still
	// sees, with the admission time.
	// +optional
	DeletingPods map[string]metav1.Time `json:"deletingPods,omitempty"`
}

// WorkloadSpread spreads one workload's pods over subsets of nodes, by count and in order,
// without changing the workload.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ws
// +kubebuilder:printcolumn:name="WorkloadName",type="string",JSONPath=".spec.targetRef.name",description="The workload whose pods are spread"
// +kubebuilder:printcolumn:name="WorkloadKind",type="string",JSONPath=".spec.targetRef.kind",description="The workload's kind"
// +kubebuilder:printcolumn:name="Adaptive",type="boolean",JSONPath=`.spec.scheduleStrategy.type[?(@ == "Adaptive")]`,description="Whether unschedulable pods move to the next subset"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type WorkloadSpread struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadSpreadSpec   `json:"spec,omitempty"`
	Status WorkloadSpreadStatus `json:"status,omitempty"`
}

// WorkloadSpreadList is a list of WorkloadSpreads.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type WorkloadSpreadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadSpread `json:"items"`
}
