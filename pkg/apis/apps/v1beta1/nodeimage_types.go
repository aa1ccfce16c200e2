package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of a NodeImage's spec, which every job pulling on the node writes
// to (see docs/api.md). The markers below repeat these numbers.
const (
	// MaxImagesPerNodeImage is the most images one NodeImage may list.
	MaxImagesPerNodeImage = 256
	// MaxTagsPerImage is the most tags of one image a NodeImage may list.
	MaxTagsPerImage = 256
	// MaxOwnersPerTag is the most owner references of one tag.
	MaxOwnersPerTag = 1024
	// MaxPullSecretsPerImage is the most pull secrets of one image.
	MaxPullSecretsPerImage = 256
)

// NodeImageSpec lists the images wanted on the node.
type NodeImageSpec struct {
	// Images maps an image name (without tag) to the tags of it to pull on this
	// node. At most 256 entries.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Images map[string]ImageSpec `json:"images,omitempty"`
}

// ImageSpec is how to pull the tags of one image on the node.
type ImageSpec struct {
	// PullSecrets references Secrets holding registry credentials for this
	// image. At most 256.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	PullSecrets []ReferenceObject `json:"pullSecrets,omitempty"`

	// Tags lists the tags of the image to pull. At most 256.
	// +kubebuilder:validation:MaxItems=256
	Tags []ImageTagSpec `json:"tags"`

	// SandboxConfig is pod-sandbox metadata passed to the runtime with the pulls.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`
}

// ReferenceObjectModeBatch is the ReferenceObject mode of a pull secret that is
// shared by all jobs using it and is cleaned up together with the image entry.
const ReferenceObjectModeBatch = "batch"

// ReferenceObject names an object in a namespace, written "<namespace>/<name>".
type ReferenceObject struct {
	// Namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	// +optional
	Name string `json:"name,omitempty"`
	// Mode tells how the referenced secret copy is managed. Empty: one copy
	// per job (the older scheme, cleaned up on its own). "batch": one copy
	// shared by all jobs, cleaned up together with the image entry.
	// +optional
	Mode string `json:"mode,omitempty"`
}

// String renders the reference as "namespace/name", or "name" when the
// namespace is empty.
func (r *ReferenceObject) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// ImageTagSpec is one tag of an image to pull.
type ImageTagSpec struct {
	// Tag of the image (or a digest).
	Tag string `json:"tag"`

	// CreatedAt is when this tag was added to the NodeImage.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`

	// PullPolicy bounds the pull of this tag. Defaults to timeoutSeconds 600
	// and backoffLimit 3.
	// +kubebuilder:default={}
	// +optional
	PullPolicy *ImageTagPullPolicy `json:"pullPolicy,omitempty"`

	// OwnerReferences lists the objects (usually ImagePullJobs) that asked for
	// this tag; the tag is removed when none is left. At most 1024.
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	OwnerReferences []corev1.ObjectReference `json:"ownerReferences,omitempty"`

	// Version is bumped by the controller whenever this tag's request changes,
	// so the node daemon can tell a new request from one it already handled.
	// Opaque to users.
	// +optional
	Version int64 `json:"version,omitempty"`

	// ImagePullPolicy is Always (pull even if present) or IfNotPresent; any
	// other value, or none, pulls as Always does.
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImageTagPullPolicy bounds the pull of one tag on the node.
type ImageTagPullPolicy struct {
	// TimeoutSeconds is how long one pull attempt may take. Defaults to 600;
	// a value below 1 is read as 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// BackoffLimit is how many times a failed pull is retried before the tag
	// counts as failed. Defaults to 3; a value below 0 is read as 3.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// TTLSecondsAfterFinished, when set, removes the tag this many seconds
	// after its pull finished (succeeded or failed); zero (or less) removes
	// it at once.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// ActiveDeadlineSeconds bounds the time the pull may take in all,
	// retries included, counted from its start. Unset, or below 1, means no
	// bound.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// NodeImageStatus is what the node daemon reports about the pulls.
type NodeImageStatus struct {
	// Desired is the number of tags to pull, over all images in spec.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Desired int32 `json:"desired"`

	// Succeeded is the number of tags pulled successfully.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Succeeded int32 `json:"succeeded"`

	// Failed is the number of tags whose pull failed.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Failed int32 `json:"failed"`

	// Pulling is the number of tags being pulled.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Pulling int32 `json:"pulling"`

	// Waiting is the number of tags not started yet.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Waiting int32 `json:"waiting"`

	// ImageStatuses maps an image name to the status of its tags.
	// +optional
	ImageStatuses map[string]ImageStatus `json:"imageStatuses,omitempty"`

	// FirstSyncStatus records when the node first finished all its pulls
	// after joining, so other systems can wait for a warmed-up node.
	// +optional
	FirstSyncStatus *SyncStatus `json:"firstSyncStatus,omitempty"`
}

// ImageStatus is the status of the tags of one image.
type ImageStatus struct {
	// Tags holds one entry per tag being or having been pulled.
	Tags []ImageTagStatus `json:"tags"`
}

// ImageTagStatus is the status of the pull of one tag.
type ImageTagStatus struct {
	// Tag the entry is about.
	Tag string `json:"tag"`

	// Phase of the pull: Waiting, Pulling, Succeeded or Failed.
	// +kubebuilder:validation:Enum=Waiting;Pulling;Succeeded;Failed
	Phase ImagePullPhase `json:"phase"`

	// Progress of the pull in percent (0-100), when the runtime reports it.
	// It may go down when a pull is retried.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Progress int32 `json:"progress,omitempty"`

	// StartTime is when the node daemon started the pull.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the pull finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Version is the spec version of the tag that this status is for.
	// +optional
	Version int64 `json:"version,omitempty"`

	// ImageID is the runtime's ID of the pulled image.
	// +optional
	ImageID string `json:"imageID,omitempty"`

	// Message is a human-readable detail, typically the last pull error.
	// +optional
	Message string `json:"message,omitempty"`
}

// ImagePullPhase is the phase of the pull of one tag.
type ImagePullPhase string

const (
	// ImagePhaseWaiting means the pull has not started.
	ImagePhaseWaiting ImagePullPhase = "Waiting"
	// ImagePhasePulling means the pull is under way.
	ImagePhasePulling ImagePullPhase = "Pulling"
	// ImagePhaseSucceeded means the image is on the node.
	ImagePhaseSucceeded ImagePullPhase = "Succeeded"
	// ImagePhaseFailed means the pull failed after all retries.
	ImagePhaseFailed ImagePullPhase = "Failed"
)

// SyncStatus summarises the first complete round of pulls on a node.
type SyncStatus struct {
	// SyncAt is when the round finished.
	// +optional
	SyncAt metav1.Time `json:"syncAt,omitempty"`
	// Status is Succeeded when every pull succeeded, Failed otherwise.
	// +kubebuilder:validation:Enum=Succeeded;Failed
	// +optional
	Status SyncStatusPhase `json:"status,omitempty"`
	// Message is a human-readable detail.
	// +optional
	Message string `json:"message,omitempty"`
}

// SyncStatusPhase is the outcome of a node's first round of pulls.
type SyncStatusPhase string

const (
	// SyncStatusSucceeded means every pull of the round succeeded.
	SyncStatusSucceeded SyncStatusPhase = "Succeeded"
	// SyncStatusFailed means at least one pull of the round failed.
	SyncStatusFailed SyncStatusPhase = "Failed"
)

// NodeImage lists the images to keep on one node and reports their pull
// status. There is one per node, named after the node; it is cluster-scoped.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desired",description="Number of tags to pull on the node."
// +kubebuilder:printcolumn:name="PULLING",type="integer",JSONPath=".status.pulling",description="Number of pulls under way."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Number of tags pulled."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Number of tags whose pull failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the NodeImage was created."
type NodeImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the images wanted on the node.
	Spec NodeImageSpec `json:"spec,omitempty"`
	// Status reports the pulls, written by the node daemon.
	Status NodeImageStatus `json:"status,omitempty"`
}

// NodeImageList is a list of NodeImage.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type NodeImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeImage `json:"items"`
}
