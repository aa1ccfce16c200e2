package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PubOperation is a kind of pod disruption a budget can guard.
type PubOperation string

// The operations, as the annotation PubProtectOperationAnnotation lists them.
const (
	// PubDeleteOperation is a DELETE of the pod.
	PubDeleteOperation PubOperation = "DELETE"
	// PubEvictOperation is a create of the pod's pods/eviction subresource (kubectl drain).
	PubEvictOperation PubOperation = "EVICT"
	// PubUpdateOperation is an update of the pod's spec that restarts a container (an in-place
	// update of an image, or a resize that cannot be done without a restart).
	PubUpdateOperation PubOperation = "UPDATE"
	// PubResizeOperation is a change of container resources that the kubelet applies without a
	// restart.
	PubResizeOperation PubOperation = "RESIZE"
)

// Annotations of a PodUnavailableBudget, with OpenKruise's keys.
const (
	// PubProtectOperationAnnotation lists, comma-separated, the operations the budget guards
	// (DELETE, EVICT, UPDATE, RESIZE). Absent or empty: DELETE, EVICT and UPDATE.
	PubProtectOperationAnnotation = "kruise.io/pub-protect-operations"
	// PubProtectTotalReplicasAnnotation is the number of replicas the budget counts, for pods that
	// have no workload with a replica count (or whose workload's count should not be used).
	PubProtectTotalReplicasAnnotation = "pub.kruise.io/protect-total-replicas"
)

// Annotations of a PodUnavailableBudget that only kruise reads (OpenKruise ignores them).
const (
	// PubProtectUnreadyPodsAnnotation, "true", counts a pod that runs but is not ready as
	// available, so that its disruption is charged to the budget as a ready pod's is. Without it
	// (as OpenKruise) a pod that is not ready may always be disrupted: when every pod turns
	// unready at once (a shared dependency is down), nothing would stop a drain from taking them
	// all (OpenKruise #1469).
	PubProtectUnreadyPodsAnnotation = "pub.kruise.io/protect-unready-pods"
	// PubBudgetPerWorkloadAnnotation, "true", applies maxUnavailable or minAvailable to each
	// workload among the pods the selector matches, rather than to all of them together: one
	// budget for many workloads (OpenKruise #1470). status.workloads has each one's numbers.
	PubBudgetPerWorkloadAnnotation = "pub.kruise.io/budget-per-workload"
)

// Labels and annotations of pods a budget reads or writes, with OpenKruise's keys.
const (
	// PodRelatedPubAnnotation names the budget that covers the pod; kruise writes it.
	PodRelatedPubAnnotation = "kruise.io/related-pub"
	// PodPubNoProtectionAnnotation, "true", lets every disruption of the pod through (a forced
	// deletion of a pod that will not come back).
	PodPubNoProtectionAnnotation = "pub.kruise.io/no-protect"
	// PodUnavailableLabelPrefix: a pod with any label of this prefix is unavailable.
	PodUnavailableLabelPrefix = "unavailable-pod.kruise.io/"
)

// PodUnavailableBudgetSpec says which pods a budget covers and how many of them may be unavailable.
// +kubebuilder:validation:XValidation:rule="has(self.selector) != has(self.targetRef)",message="exactly one of selector and targetRef must be set"
// +kubebuilder:validation:XValidation:rule="has(self.maxUnavailable) != has(self.minAvailable)",message="exactly one of maxUnavailable and minAvailable must be set"
type PodUnavailableBudgetSpec struct {
	// Selector is a label query over the pods the budget covers.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// TargetReference names the workload whose pods the budget covers, in the budget's
	// namespace.
	// +optional
	TargetReference *TargetReference `json:"targetRef,omitempty"`

	// MaxUnavailable is how many of the covered pods may be unavailable after a disruption is
	// allowed (a count, or a percentage of the replicas rounded up).
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MinAvailable is how many of the covered pods must remain available after a disruption is
	// allowed (a count, or a percentage of the replicas rounded up).
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
}

// TargetReference names a workload in the budget's namespace.
type TargetReference struct {
	// APIVersion of the workload, e.g. apps.kruise.io/v1alpha1.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the workload, e.g. CloneSet.
	Kind string `json:"kind,omitempty"`
	// Name of the workload.
	Name string `json:"name,omitempty"`
}

// PodUnavailableBudgetStatus is what the budget's controller and its admission saw last.
type PodUnavailableBudgetStatus struct {
	// ObservedGeneration is the generation the numbers below were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`

	// DisruptedPods are the pods whose deletion or eviction was allowed and not yet seen done,
	// with when it was allowed. A pod is charged here before its disruption is allowed.
	// +optional
	DisruptedPods map[string]metav1.Time `json:"disruptedPods,omitempty"`

	// UnavailablePods are the pods whose update was allowed and that have not yet been seen
	// available again, with when it was allowed.
	// +optional
	UnavailablePods map[string]metav1.Time `json:"unavailablePods,omitempty"`

	// UnavailableAllowed is how many more pods may be disrupted now.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	UnavailableAllowed int32 `json:"unavailableAllowed"`

	// CurrentAvailable is how many covered pods are available and not charged.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	CurrentAvailable int32 `json:"currentAvailable"`

	// DesiredAvailable is how many covered pods must stay available.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	DesiredAvailable int32 `json:"desiredAvailable"`

	// TotalReplicas is how many pods the budget counts (the workloads' replicas).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	TotalReplicas int32 `json:"totalReplicas"`

	// Workloads has each workload's numbers when the budget applies per workload
	// (PubBudgetPerWorkloadAnnotation); a kruise addition. The numbers above are their sums.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	Workloads []WorkloadBudget `json:"workloads,omitempty"`
}

// WorkloadBudget is one workload's share of a budget that applies per workload.
type WorkloadBudget struct {
	// Kind of the workload (ReplicaSets are counted under their Deployment).
	Kind string `json:"kind"`
	// Name of the workload.
	Name string `json:"name"`
	// UnavailableAllowed is how many more of its pods may be disrupted now.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	UnavailableAllowed int32 `json:"unavailableAllowed"`
	// CurrentAvailable is how many of its pods are available and not charged.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	CurrentAvailable int32 `json:"currentAvailable"`
	// DesiredAvailable is how many of its pods must stay available.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	DesiredAvailable int32 `json:"desiredAvailable"`
	// TotalReplicas is its replicas.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	TotalReplicas int32 `json:"totalReplicas"`
}

// PodUnavailableBudget limits how many of a set of pods may be unavailable at once through
// deletion, eviction or update, as a PodDisruptionBudget limits evictions only.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pub
// +kubebuilder:printcolumn:name="Allowed",type="integer",JSONPath=".status.unavailableAllowed",description="How many more pods may be disrupted now"
// +kubebuilder:printcolumn:name="Current",type="integer",JSONPath=".status.currentAvailable",description="Available pods not charged"
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desiredAvailable",description="Pods that must stay available"
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.totalReplicas",description="Replicas the budget counts"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type PodUnavailableBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodUnavailableBudgetSpec   `json:"spec,omitempty"`
	Status PodUnavailableBudgetStatus `json:"status,omitempty"`
}

// PodUnavailableBudgetList is a list of PodUnavailableBudgets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type PodUnavailableBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodUnavailableBudget `json:"items"`
}
