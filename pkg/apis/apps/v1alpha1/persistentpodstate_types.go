package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations of PersistentPodState, with OpenKruise's keys.
const (
	// AnnotationAutoGeneratePersistentPodState, "true" on a StatefulSet, makes kruise create and
	// keep a PersistentPodState for it, named as the workload, from the two annotations below.
	AnnotationAutoGeneratePersistentPodState = "kruise.io/auto-generate-persistent-pod-state"
	// AnnotationRequiredPersistentTopology lists (comma-separated) node label keys a recreated pod
	// must match again.
	AnnotationRequiredPersistentTopology = "kruise.io/required-persistent-topology"
	// AnnotationPreferredPersistentTopology lists (comma-separated) node label keys a recreated pod
	// prefers to match again (weight 100).
	AnnotationPreferredPersistentTopology = "kruise.io/preferred-persistent-topology"
	// AnnotationPersistentPodAnnotations lists (comma-separated) pod annotation keys to record.
	AnnotationPersistentPodAnnotations = "kruise.io/persistent-pod-annotations"
	// InjectedPersistentPodStateAnnotation on a pod names the PersistentPodState whose recorded
	// topology was written into it at creation.
	InjectedPersistentPodStateAnnotation = "kruise.io/injected-persistent-pod-state"
)

// PersistentPodStateSpec says which workload's pods are recorded, and what is recorded.
type PersistentPodStateSpec struct {
	// TargetReference is the StatefulSet (apps/v1 or apps.kruise.io) whose pods are recorded, in
	// the PersistentPodState's namespace. It cannot change.
	TargetReference TargetReference `json:"targetRef"`

	// PersistentPodAnnotations are pod annotations recorded with each pod's state.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	PersistentPodAnnotations []PersistentPodAnnotation `json:"persistentPodAnnotations,omitempty"`

	// RequiredPersistentTopology: a recreated pod must run where these node labels have the
	// values recorded for it (written into its nodeSelector).
	// +optional
	RequiredPersistentTopology *NodeTopologyTerm `json:"requiredPersistentTopology,omitempty"`

	// PreferredPersistentTopology: a recreated pod prefers nodes where these labels have the
	// recorded values (preferred node affinity with the given weight).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	PreferredPersistentTopology []PreferredTopologyTerm `json:"preferredPersistentTopology,omitempty"`

	// PersistentPodStateRetentionPolicy is WhenScaled (default: a pod's state goes when the
	// workload scales below its ordinal) or WhenDeleted (kept until the workload is deleted).
	// +optional
	PersistentPodStateRetentionPolicy PersistentPodStateRetentionPolicyType `json:"persistentPodStateRetentionPolicy,omitempty"`
}

// PreferredTopologyTerm is a weighted NodeTopologyTerm.
type PreferredTopologyTerm struct {
	// Weight in 1..100, as a preferred scheduling term's.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Weight int32 `json:"weight"`
	// Preference is the node label keys.
	Preference NodeTopologyTerm `json:"preference"`
}

// NodeTopologyTerm lists node label keys (topology.kubernetes.io/zone, kubernetes.io/hostname…).
type NodeTopologyTerm struct {
	// NodeTopologyKeys are node label keys.
	// +kubebuilder:validation:MaxItems=64
	NodeTopologyKeys []string `json:"nodeTopologyKeys"`
}

// PersistentPodAnnotation names one pod annotation to record.
type PersistentPodAnnotation struct {
	// Key of the annotation.
	Key string `json:"key"`
}

// PersistentPodStateRetentionPolicyType says when a pod's recorded state is dropped.
type PersistentPodStateRetentionPolicyType string

const (
	// PersistentPodStateRetentionPolicyWhenScaled drops a pod's state once the workload's replicas
	// no longer cover its ordinal and the pod is gone.
	PersistentPodStateRetentionPolicyWhenScaled PersistentPodStateRetentionPolicyType = "WhenScaled"
	// PersistentPodStateRetentionPolicyWhenDeleted keeps every state until the workload goes.
	PersistentPodStateRetentionPolicyWhenDeleted PersistentPodStateRetentionPolicyType = "WhenDeleted"
)

// PersistentPodStateStatus holds the recorded states.
type PersistentPodStateStatus struct {
	// ObservedGeneration is the generation this status describes.
	ObservedGeneration int64 `json:"observedGeneration"`
	// PodStates maps a pod's name to where it last ran.
	// +optional
	PodStates map[string]PodState `json:"podStates,omitempty"`
}

// PodState is where a pod ran.
type PodState struct {
	// NodeName is the node the pod ran on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// NodeTopologyLabels are the node's values of the topology keys.
	// +optional
	NodeTopologyLabels map[string]string `json:"nodeTopologyLabels,omitempty"`
	// Annotations are the recorded pod annotations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PersistentPodState records where a StatefulSet's pods ran, so that a recreated pod returns
// to the same node or zone.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type PersistentPodState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PersistentPodStateSpec   `json:"spec,omitempty"`
	Status PersistentPodStateStatus `json:"status,omitempty"`
}

// PersistentPodStateList is a list of PersistentPodStates.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type PersistentPodStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PersistentPodState `json:"items"`
}
