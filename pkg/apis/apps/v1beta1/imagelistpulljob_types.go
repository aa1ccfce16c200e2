package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImageListPullJobSpec is the desired state of an ImageListPullJob.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.selector) && has(self.podSelector))",message="selector and podSelector are mutually exclusive"
type ImageListPullJobSpec struct {
	// Images lists the images to pull; one ImagePullJob is created per image,
	// all sharing the settings below. An empty name is refused (as for
	// ImagePullJob's image): no ImagePullJob could be created for it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MinLength=1
	Images []string `json:"images"`

	ImagePullJobTemplate `json:",inline"`
}

// ImageListPullJobStatus is the observed progress of an ImageListPullJob.
type ImageListPullJobStatus struct {
	// StartTime is when the controller started handling the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when every ImagePullJob of the list had finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Desired is the number of ImagePullJobs wanted, normally the number of images.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Desired int32 `json:"desired"`

	// Active is the number of ImagePullJobs still running.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Active int32 `json:"active"`

	// Completed is the number of ImagePullJobs that have finished.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Completed int32 `json:"completed"`

	// Succeeded is the number of ImagePullJobs that finished with every node
	// succeeded.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Succeeded int32 `json:"succeeded"`

	// FailedImageStatuses describes the ImagePullJobs with at least one failed node.
	// +optional
	FailedImageStatuses []*FailedImageStatus `json:"failedImageStatuses,omitempty"`
}

// FailedImageStatus describes an ImagePullJob of the list that failed on some nodes.
type FailedImageStatus struct {
	// ImagePullJob is the name of the failing ImagePullJob.
	// +optional
	ImagePullJob string `json:"imagePullJob,omitempty"`

	// Name is the image that job pulls.
	// +optional
	Name string `json:"name,omitempty"`

	// Message summarises the failure.
	// +optional
	Message string `json:"message,omitempty"`
}

// ImageListPullJob pulls several images onto a set of nodes by creating one
// ImagePullJob per image.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="Number of ImagePullJobs wanted."
// +kubebuilder:printcolumn:name="SUCCEEDED",type="integer",JSONPath=".status.succeeded",description="Number of ImagePullJobs that succeeded on every node."
// +kubebuilder:printcolumn:name="COMPLETED",type="integer",JSONPath=".status.completed",description="Number of ImagePullJobs that have finished."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the job was created."
type ImageListPullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to pull and where.
	Spec ImageListPullJobSpec `json:"spec,omitempty"`
	// Status is the observed progress, written by the controller.
	Status ImageListPullJobStatus `json:"status,omitempty"`
}

// ImageListPullJobList is a list of ImageListPullJob.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ImageListPullJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageListPullJob `json:"items"`
}
