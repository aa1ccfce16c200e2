package v1beta1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdvancedCronJobKind is the kind's name, as owner references write it.
const AdvancedCronJobKind = "AdvancedCronJob"

// ScheduledAtAnnotation on a job an AdvancedCronJob created holds the run's scheduled time
// (RFC 3339), OpenKruise's key.
const ScheduledAtAnnotation = "apps.kruise.io/scheduled-at"

// AdvancedCronJobSpec schedules a Job, a BroadcastJob or an ImageListPullJob.
type AdvancedCronJobSpec struct {
	// Schedule is a cron expression, as the built-in CronJob reads it (five fields, the @hourly
	// style macros, an optional TZ= or CRON_TZ= prefix).
	// +kubebuilder:validation:MinLength=0
	Schedule string `json:"schedule"`

	// TimeZone is the IANA name of the time zone the schedule is read in; unset: the controller's
	// local time zone (UTC in its image).
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// StartingDeadlineSeconds is how late a run may still start; a run missed by more is skipped.
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// ConcurrencyPolicy is what a run does while the previous one is still active: Allow (run
	// beside it), Forbid (skip this run) or Replace (delete it first). Unset: Allow, or Replace
	// for an ImageListPullJob template (which takes only Forbid and Replace).
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// Paused stops new runs; active ones are left alone.
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
	BroadcastJobTemplate *BroadcastJobTemplateSpec `json:"broadcastJobTemplate,omitempty"`

	// ImageListPullJobTemplate is an ImageListPullJob (v1beta1 only, as in OpenKruise).
	// +optional
	ImageListPullJobTemplate *ImageListPullJobTemplateSpec `json:"imageListPullJobTemplate,omitempty"`
}

// TemplateKind is the kind of job an AdvancedCronJob creates.
type TemplateKind string

const (
	JobTemplate              TemplateKind = "Job"
	BroadcastJobTemplate     TemplateKind = "BroadcastJob"
	ImageListPullJobTemplate TemplateKind = "ImageListPullJob"
)

// BroadcastJobTemplateSpec is the metadata and spec of the BroadcastJobs a run creates.
type BroadcastJobTemplateSpec struct {
	// Metadata's labels and annotations go onto each BroadcastJob. Kept as written (OpenKruise's
	// schema lets the API server prune them, so they never reach the jobs there).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec BroadcastJobSpec `json:"spec,omitempty"`
}

// ImageListPullJobTemplateSpec is the metadata and spec of the ImageListPullJobs a run creates.
type ImageListPullJobTemplateSpec struct {
	// Metadata's labels and annotations go onto each ImageListPullJob, kept as written (as for
	// BroadcastJobTemplateSpec).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec ImageListPullJobSpec `json:"spec,omitempty"`
}

// ConcurrencyPolicy is what a run does while the previous one is still active.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

const (
	AllowConcurrent   ConcurrencyPolicy = "Allow"
	ForbidConcurrent  ConcurrencyPolicy = "Forbid"
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// AdvancedCronJobStatus is the observed state of an AdvancedCronJob.
type AdvancedCronJobStatus struct {
	// Type is the kind of job the template creates.
	// +optional
	Type TemplateKind `json:"type,omitempty"`

	// Active are the jobs of this AdvancedCronJob still running.
	// +optional
	Active []corev1.ObjectReference `json:"active,omitempty"`

	// LastScheduleTime is the scheduled time of the newest job it created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
}

// AdvancedCronJob creates a Job, a BroadcastJob or an ImageListPullJob on a cron schedule.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=acj
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Schedule",type="string",JSONPath=".spec.schedule",description="The cron schedule"
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".status.type",description="The kind of job it creates"
// +kubebuilder:printcolumn:name="LastScheduleTime",type="date",JSONPath=".status.lastScheduleTime",description="When the newest run was scheduled"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type AdvancedCronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AdvancedCronJobSpec   `json:"spec,omitempty"`
	Status AdvancedCronJobStatus `json:"status,omitempty"`
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
