package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels a BroadcastJob puts on its pods (and its pod template), with OpenKruise's keys. A template
// may not set them itself.
const (
	// BroadcastJobNameLabel holds the job's name.
	BroadcastJobNameLabel = "broadcastjob-name"
	// BroadcastJobControllerUIDLabel holds the job's UID.
	BroadcastJobControllerUIDLabel = "broadcastjob-controller-uid"
)

// BroadcastJobSpec is a pod to run to completion once on every eligible node.
type BroadcastJobSpec struct {
	// Parallelism is how many of the job's pods may run at once: a count, or a percentage of the
	// eligible nodes (rounded up). Unset: no limit.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) != int || (self >= 0 && self <= 2147483647)",message="parallelism must be a non-negative 32-bit number or a percentage such as \"50%\""
	// +optional
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`

	// Template is the pod run on each node. Its restartPolicy must be Never or OnFailure.
	// Schemaless, as in OpenKruise: the API server keeps it as sent, the webhook validates it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// CompletionPolicy says when the job is finished: Always (once every eligible node has run its
	// pod) or Never (the job keeps running and serves nodes that join later).
	// +kubebuilder:default={}
	// +optional
	CompletionPolicy CompletionPolicy `json:"completionPolicy"`

	// Paused stops the creation of new pods; running pods are left alone.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// FailurePolicy says what a failed pod does to the job.
	// +kubebuilder:default={}
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// CompletionPolicy and its type are ImagePullJob's (as in OpenKruise, one type serves both).

// FailurePolicy says what a failed pod does to a BroadcastJob.
type FailurePolicy struct {
	// Type is FailFast (default: the job fails), Continue (the job goes on) or Pause (the job is
	// paused).
	// +kubebuilder:default=FailFast
	// +optional
	Type FailurePolicyType `json:"type,omitempty"`

	// RestartLimit is how many container restarts (summed over the pod's containers) an OnFailure
	// pod may have before it counts as failed.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RestartLimit int32 `json:"restartLimit,omitempty"`
}

// FailurePolicyType is a BroadcastJob's failure policy.
type FailurePolicyType string

const (
	// FailurePolicyTypeContinue goes on after a pod failed.
	FailurePolicyTypeContinue FailurePolicyType = "Continue"
	// FailurePolicyTypeFailFast fails the job at its first failed pod.
	FailurePolicyTypeFailFast FailurePolicyType = "FailFast"
	// FailurePolicyTypePause pauses the job at a failed pod.
	FailurePolicyTypePause FailurePolicyType = "Pause"
)

// JobConditionType is the type of a BroadcastJob's condition.
type JobConditionType string

const (
	// JobComplete: every eligible node ran its pod.
	JobComplete JobConditionType = "Complete"
	// JobFailed: the job failed (a pod under FailFast, or its deadline).
	JobFailed JobConditionType = "Failed"
)

// JobCondition is a condition of a BroadcastJob.
type JobCondition struct {
	// Type is Complete or Failed.
	Type JobConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastProbeTime is when the condition was last checked.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is when the condition last changed status.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word reason for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says more about the last transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// BroadcastJobStatus is the observed progress of a BroadcastJob.
type BroadcastJobStatus struct {
	// Conditions of the job.
	// +optional
	Conditions []JobCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// StartTime is when the controller started the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Active is how many of its pods are running or waiting to run.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Active int32 `json:"active"`

	// Succeeded is how many of its pods succeeded.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Succeeded int32 `json:"succeeded"`

	// Failed is how many of its pods failed.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Failed int32 `json:"failed"`

	// Desired is how many pods the job wants: the number of eligible nodes.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Desired int32 `json:"desired"`

	// Phase is running, paused, completed or failed.
	Phase BroadcastJobPhase `json:"phase"`
}

// BroadcastJobPhase is a BroadcastJob's phase (lower case, as OpenKruise writes it).
type BroadcastJobPhase string

const (
	PhaseCompleted BroadcastJobPhase = "completed"
	PhaseRunning   BroadcastJobPhase = "running"
	PhasePaused    BroadcastJobPhase = "paused"
	PhaseFailed    BroadcastJobPhase = "failed"
)

// BroadcastJob runs a pod to completion on every eligible node (a node-wide task: clean a disk,
// warm a cache, collect a dump).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bcj
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desired",description="The number of eligible nodes, one pod each"
// +kubebuilder:printcolumn:name="Active",type="integer",JSONPath=".status.active",description="The number of pods running"
// +kubebuilder:printcolumn:name="Succeeded",type="integer",JSONPath=".status.succeeded",description="The number of pods that succeeded"
// +kubebuilder:printcolumn:name="Failed",type="integer",JSONPath=".status.failed",description="The number of pods that failed"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type BroadcastJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BroadcastJobSpec   `json:"spec,omitempty"`
	Status BroadcastJobStatus `json:"status,omitempty"`
}

// BroadcastJobList is a list of BroadcastJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type BroadcastJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BroadcastJob `json:"items"`
}
