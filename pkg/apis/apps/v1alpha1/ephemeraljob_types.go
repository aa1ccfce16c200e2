package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EphemeralContainerEnvKey is the environment variable an EphemeralJob sets on each container it
// adds, with its UID as the value: the mark of whose container it is (OpenKruise's key).
const EphemeralContainerEnvKey = "KRUISE_EJOB_ID"

// EphemeralJobSpec adds ephemeral containers (a debugger, a dump collector) to running pods.
type EphemeralJobSpec struct {
	// Selector chooses the pods, in the job's namespace.
	Selector *metav1.LabelSelector `json:"selector"`

	// Replicas is at most how many pods get the containers; unset: every matched pod.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Parallelism is how many pods may run the containers at once (default 1).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Parallelism *int32 `json:"parallelism,omitempty"`

	// Template holds the ephemeral containers to add.
	Template EphemeralContainerTemplateSpec `json:"template"`

	// Paused stops adding containers to more pods.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ActiveDeadlineSeconds fails the job this long after it started.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished deletes the job this long after it finished (1800 when unset).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// EphemeralContainerTemplateSpec holds the containers an EphemeralJob adds.
type EphemeralContainerTemplateSpec struct {
	// EphemeralContainers are added to each chosen pod. Schemaless, as in OpenKruise: the webhook
	// validates them.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +patchMergeKey=name
	// +patchStrategy=merge
	EphemeralContainers []corev1.EphemeralContainer `json:"ephemeralContainers" patchStrategy:"merge" patchMergeKey:"name"`
}

// EphemeralJobStatus is the observed progress of an EphemeralJob.
type EphemeralJobStatus struct {
	// Conditions of the job.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []EphemeralJobCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// StartTime is when the controller started the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Phase is Waiting, Running, Succeeded, Failed, Paused, Error or Unknown.
	// +optional
	Phase EphemeralJobPhase `json:"phase"`

	// Matches is how many pods the selector matched (capped at replicas).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Matches int32 `json:"match"`

	// Running is how many pods run the containers now.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Running int32 `json:"running"`

	// Succeeded is how many pods' containers exited 0.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Succeeded int32 `json:"succeeded"`

	// Waiting is how many pods' containers have not started yet.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Waiting int32 `json:"waiting"`

	// Failed is how many pods' containers failed.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Failed int32 `json:"failed"`
}

// EphemeralJobCondition is a condition of an EphemeralJob.
type EphemeralJobCondition struct {
	// Type is Initialized, MatchedEmpty, JobSucceeded, JobFailed or JobError.
	Type EphemeralJobConditionType `json:"type"`
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

// EphemeralJobConditionType is the type of an EphemeralJob's condition.
type EphemeralJobConditionType string

const (
	EJobSucceeded    EphemeralJobConditionType = "JobSucceeded"
	EJobFailed       EphemeralJobConditionType = "JobFailed"
	EJobError        EphemeralJobConditionType = "JobError"
	EJobInitialized  EphemeralJobConditionType = "Initialized"
	EJobMatchedEmpty EphemeralJobConditionType = "MatchedEmpty"
)

// EphemeralJobPhase is an EphemeralJob's phase.
type EphemeralJobPhase string

const (
	EphemeralJobSucceeded EphemeralJobPhase = "Succeeded"
	EphemeralJobFailed    EphemeralJobPhase = "Failed"
	EphemeralJobWaiting   EphemeralJobPhase = "Waiting"
	EphemeralJobRunning   EphemeralJobPhase = "Running"
	EphemeralJobPause     EphemeralJobPhase = "Paused"
	EphemeralJobError     EphemeralJobPhase = "Error"
	EphemeralJobUnknown   EphemeralJobPhase = "Unknown"
)

// EphemeralJob adds ephemeral containers to the running pods its selector matches and follows
// them to completion.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ejob
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.phase",description="The job's phase"
// +kubebuilder:printcolumn:name="MATCH",type="integer",JSONPath=".status.match",description="Pods matched"
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Pods whose containers succeeded"
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Pods whose containers failed"
// +kubebuilder:printcolumn:name="RUNNING",type="integer",JSONPath=".status.running",description="Pods running the containers"
// +kubebuilder:printcolumn:name="WAITING",type="integer",JSONPath=".status.waiting",description="Pods whose containers wait to start"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type EphemeralJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EphemeralJobSpec   `json:"spec,omitempty"`
	Status EphemeralJobStatus `json:"status,omitempty"`
}

// EphemeralJobList is a list of EphemeralJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type EphemeralJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EphemeralJob `json:"items"`
}
