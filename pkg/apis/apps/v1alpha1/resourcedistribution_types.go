package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Annotations a ResourceDistribution writes on its copies, with OpenKruise's keys.
const (
	// ResourceDistributionHashAnnotation is the sha256 (hex) of spec.resource's raw bytes, as the
	// copy was last written.
	ResourceDistributionHashAnnotation = "kruise.io/resourcedistribution.resource.hashcode"
	// ResourceDistributionSourceAnnotation names the ResourceDistribution a copy comes from.
	ResourceDistributionSourceAnnotation = "kruise.io/resourcedistribution.resource.from"
)

// ResourceDistributionSpec is one Secret or ConfigMap and the namespaces it is copied into.
type ResourceDistributionSpec struct {
	// Resource is the whole object (apiVersion v1, kind Secret or ConfigMap, metadata.name, data);
	// its apiVersion, kind and name cannot change.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	Resource runtime.RawExtension `json:"resource"`

	// Targets are the namespaces the resource is copied into.
	Targets ResourceDistributionTargets `json:"targets"`
}

// ResourceDistributionTargets chooses namespaces: (all, or the included ones and those the label
// selector matches) minus the excluded ones.
type ResourceDistributionTargets struct {
	// AllNamespaces selects every namespace.
	// +optional
	AllNamespaces bool `json:"allNamespaces,omitempty"`

	// ExcludedNamespaces are never targets.
	// +optional
	ExcludedNamespaces ResourceDistributionTargetNamespaces `json:"excludedNamespaces,omitempty"`

	// IncludedNamespaces are targets.
	// +optional
	IncludedNamespaces ResourceDistributionTargetNamespaces `json:"includedNamespaces,omitempty"`

	// NamespaceLabelSelector selects namespaces by label.
	// +optional
	NamespaceLabelSelector metav1.LabelSelector `json:"namespaceLabelSelector,omitempty"`
}

// ResourceDistributionTargetNamespaces is a list of namespaces.
type ResourceDistributionTargetNamespaces struct {
	// List of namespaces, by name.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +optional
	List []ResourceDistributionNamespace `json:"list,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
}

// ResourceDistributionNamespace names one namespace.
type ResourceDistributionNamespace struct {
	// Name of the namespace.
	// +optional
	Name string `json:"name,omitempty"`
}

// ResourceDistributionStatus counts the copies and lists the namespaces that failed, per reason.
type ResourceDistributionStatus struct {
	// Desired is the number of target namespaces.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Desired int32 `json:"desired,omitempty"`
	// Succeeded is the number of target namespaces holding an up-to-date copy.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed is Desired - Succeeded.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are always the six types, in a fixed order, each listing its failed namespaces.
	// +optional
	Conditions []ResourceDistributionCondition `json:"conditions,omitempty"`
}

// ResourceDistributionCondition is one kind of failure and the namespaces it happened in.
type ResourceDistributionCondition struct {
	// Type of failure.
	Type ResourceDistributionConditionType `json:"type"`
	// Status is True when some namespace failed this way.
	Status ResourceDistributionConditionStatus `json:"status"`
	// LastTransitionTime is when Status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is the last error, or Succeeded.
	// +optional
	Reason string `json:"reason,omitempty"`
	// FailedNamespaces lists the namespaces that failed this way.
	// +optional
	FailedNamespaces []string `json:"failedNamespace,omitempty"`
}

// ResourceDistributionConditionType is a kind of failure.
type ResourceDistributionConditionType string

// The six condition types, in the order status lists them.
const (
	ResourceDistributionGetResourceFailed    ResourceDistributionConditionType = "GetResourceFailed"
	ResourceDistributionCreateResourceFailed ResourceDistributionConditionType = "CreateResourceFailed"
	ResourceDistributionUpdateResourceFailed ResourceDistributionConditionType = "UpdateResourceFailed"
	ResourceDistributionDeleteResourceFailed ResourceDistributionConditionType = "DeleteResourceFailed"
	ResourceDistributionConflictOccurred     ResourceDistributionConditionType = "ConflictOccurred"
	ResourceDistributionNamespaceNotExists   ResourceDistributionConditionType = "NamespaceNotExists"
)

// ResourceDistributionConditionStatus is True, False or Unknown.
type ResourceDistributionConditionStatus string

const (
	ResourceDistributionConditionTrue    ResourceDistributionConditionStatus = "True"
	ResourceDistributionConditionFalse   ResourceDistributionConditionStatus = "False"
	ResourceDistributionConditionUnknown ResourceDistributionConditionStatus = "Unknown"
)

// ResourceDistribution copies one Secret or ConfigMap into the namespaces its targets choose and
// keeps the copies in sync. Cluster-scoped: only cluster administrators may create one.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=distributor
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="The number of target namespaces."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="The number of up-to-date copies."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="The number of target namespaces without an up-to-date copy."
type ResourceDistribution struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceDistributionSpec   `json:"spec,omitempty"`
	Status ResourceDistributionStatus `json:"status,omitempty"`
}

// ResourceDistributionList is a list of ResourceDistributions.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ResourceDistributionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceDistribution `json:"items"`
}
