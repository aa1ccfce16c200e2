package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// AdvancedCronJob in v1alpha1 is v1beta1's without the ImageListPullJob template (as in OpenKruise
// v1.9.0, which stores v1beta1). Under the CRD's conversion strategy None, reading an
// AdvancedCronJob with that template as v1alpha1 shows no template field for it (docs/api.md).

// AdvancedCronJobSpec schedules a Job or a BroadcastJob.
type AdvancedCronJobSpec struct {
	// Schedule is a cron expression, as the built-in CronJob reads it.
	// +kubebuilder:validation:MinLength=0
	Schedule string `json:"schedule"`

	// TimeZone is the IANA name of the time zone the schedule is read in.
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// StartingDeadlineSeconds is how late a run may still start.
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// ConcurrencyPolicy is Allow (unset), Forbid or Replace.
	// +optional
	ConcurrencyPolicy v1beta1.ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// Paused stops new runs.
	// +kubebuilder:default=false
	// +optional
	Paused *bool `json:"paused,omitempty"`

	// SuccessfulJobsHistoryLimit is how many finished successful jobs are kept.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// FailedJobsHistoryLimit is how many finished failed jobs are kept.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`

	// Template is the job each run creates: exactly one of its fields is set.
	Template CronJobTemplate `json:"template"`
}

// CronJobTemplate is the job an AdvancedCronJob creates; exactly one field is set.
type CronJobTemplate struct {
	// JobTemplate is a batch/v1 Job. Schemaless, as in OpenKruise.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	JobTemplate *batchv1.JobTemplateSpec `json:"jobTemplate,omitempty"`

	// BroadcastJobTemplate is a BroadcastJob.
	// +optional
	BroadcastJobTemplate *v1beta1.BroadcastJobTemplateSpec `json:"broadcastJobTemplate,omitempty"`
}

// AdvancedCronJob creates a Job or a BroadcastJob on a cron schedule.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=acj
// +kubebuilder:printcolumn:name="Schedule",type="string",JSONPath=".spec.schedule",description="The cron schedule"
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".status.type",description="The kind of job it creates"
// +kubebuilder:printcolumn:name="LastScheduleTime",type="date",JSONPath=".status.lastScheduleTime",description="When the newest run was scheduled"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type AdvancedCronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AdvancedCronJobSpec           `json:"spec,omitempty"`
	Status v1beta1.AdvancedCronJobStatus `json:"status,omitempty"`
}

// AdvancedCronJobList is a list of AdvancedCronJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type AdvancedCronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AdvancedCronJob `json:"items"`
}
