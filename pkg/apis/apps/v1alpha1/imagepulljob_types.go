package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Well-known keys around image pulling and pre-download (the keys OpenKruise
// uses, so existing workloads and tooling keep working).
const (
	// ImagePreDownloadParallelismKey sets the parallelism of the pre-download ImagePullJob.
	ImagePreDownloadParallelismKey = "apps.kruise.io/image-predownload-parallelism"
	// ImagePreDownloadTimeoutSecondsKey sets pullPolicy.timeoutSeconds of the pre-download ImagePullJob.
	ImagePreDownloadTimeoutSecondsKey = "apps.kruise.io/image-predownload-timeout-seconds"
	// ImagePreDownloadMinUpdatedReadyPods is how many updated pods must be ready before pre-download starts.
	ImagePreDownloadMinUpdatedReadyPods = "apps.kruise.io/image-predownload-min-updated-ready-pods"
	// ImagePreDownloadCreatedKey is a ControllerRevision label: pre-download jobs were created for it.
	ImagePreDownloadCreatedKey = "apps.kruise.io/pre-predownload-created"
	// ImagePreDownloadIgnoredKey is a ControllerRevision label: pre-download is skipped for it.
	ImagePreDownloadIgnoredKey = "apps.kruise.io/image-predownload-ignored"
	// PullingImageByAnnotation is added to the sandbox config passed to CRI
	// PullImage so runtimes and their plugins can tell who asked for the pull.
	PullingImageByAnnotation = "apps.kruise.io/pulling-image-by"
	// PullingImageByValue is the value of PullingImageByAnnotation.
	PullingImageByValue = "kruise-daemon"
	// ProtectionFinalizer is the finalizer that keeps an ImagePullJob until its
	// pull requests have been withdrawn from the NodeImages.
	ProtectionFinalizer = "apps.kruise.io/deletion-protection"
)

// ImagePullPolicy says whether an image already present on a node is pulled again.
// +enum
type ImagePullPolicy string

const (
	// PullAlways pulls the image even when the node already has it.
	PullAlways ImagePullPolicy = "Always"
	// PullIfNotPresent pulls the image only when the node does not have it.
	PullIfNotPresent ImagePullPolicy = "IfNotPresent"
)

// Bounds of the fields every job writes into the NodeImage that all jobs
// on a node share (see docs/api.md): generous for any real manifest, small
// enough that one job cannot push a NodeImage past the API server's limits.
// The markers below repeat these numbers.
const (
	// MaxPullSecretsPerJob bounds spec.pullSecrets.
	MaxPullSecretsPerJob = 128
	// MaxSandboxEntries bounds sandboxConfig.labels and, separately,
	// sandboxConfig.annotations.
	MaxSandboxEntries = 256
	// MaxSandboxKeyLength bounds a sandboxConfig key: the longest
	// Kubernetes label or annotation key (a 253-character prefix, "/" and
	// a 63-character name).
	MaxSandboxKeyLength = 317
	// MaxSandboxSize bounds the characters of all sandboxConfig keys and
	// values together: Kubernetes' limit on an object's annotations.
	MaxSandboxSize = 256 * 1024
)

// SandboxConfig is pod-sandbox metadata handed to the container runtime with
// the CRI PullImage call, as the kubelet does for a pod's own pulls. Runtimes
// and their plugins may use it, for example to pick a snapshotter or mirror.
// Keys are at most 317 characters (a Kubernetes label or annotation key), at
// most 256 labels and 256 annotations, and all keys and values together at
// most 256 KiB (Kubernetes' limit on a pod's annotations).
//
// +kubebuilder:validation:XValidation:rule="!has(self.labels) || self.labels.all(k, size(k) <= 317)",message="sandboxConfig.labels keys must be at most 317 characters"
// +kubebuilder:validation:XValidation:rule="!has(self.annotations) || self.annotations.all(k, size(k) <= 317)",message="sandboxConfig.annotations keys must be at most 317 characters"
// +kubebuilder:validation:XValidation:rule="(has(self.labels) ? self.labels.map(k, size(k) + size(self.labels[k])).sum() : 0) + (has(self.annotations) ? self.annotations.map(k, size(k) + size(self.annotations[k])).sum() : 0) <= 262144",message="sandboxConfig labels and annotations must be at most 262144 characters in all (keys and values)"
type SandboxConfig struct {
	// Labels passed as the sandbox labels of the pull request.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations passed as the sandbox annotations of the pull request.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PullPolicy bounds a single pull of the image on one node.
type PullPolicy struct {
	// TimeoutSeconds is how long one pull attempt may take. Defaults to 600;
	// a value below 1 (which OpenKruise admits) is read as 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// BackoffLimit is how many times a failed pull is retried on a node before
	// that node counts as failed. Defaults to 3; a value below 0 (which
	// OpenKruise admits) is read as 3.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// CompletionPolicyType is the kind of completion policy of a job.
type CompletionPolicyType string

const (
	// Always means the job finishes once every selected node has finished
	// (succeeded or failed), or when activeDeadlineSeconds passes.
	Always CompletionPolicyType = "Always"
	// Never means the job never finishes: it keeps the image present on the
	// selected nodes, including nodes that join later.
	Never CompletionPolicyType = "Never"
)

// CompletionPolicy says when a job is finished.
//
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type == 'Always' || (!has(self.activeDeadlineSeconds) && !has(self.ttlSecondsAfterFinished))",message="activeDeadlineSeconds and ttlSecondsAfterFinished require completionPolicy type Always"
type CompletionPolicy struct {
	// Type is Always (finish when all nodes are done) or Never (run until
	// deleted). Defaults to Always.
	// +kubebuilder:validation:Enum=Always;Never
	// +kubebuilder:default=Always
	// +optional
	Type CompletionPolicyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=CompletionPolicyType"`

	// ActiveDeadlineSeconds bounds the job's run time, counted from
	// status.startTime; when it passes the job is finished. On an
	// ImagePullJob it must be at least pullPolicy.timeoutSeconds; on an
	// ImageListPullJob a shorter deadline lowers the timeoutSeconds of the
	// ImagePullJobs it creates to the deadline. A value below 1 (which
	// OpenKruise admits) has passed when the job starts. Only with type Always.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,2,opt,name=activeDeadlineSeconds"`

	// TTLSecondsAfterFinished, when set, deletes the job this many seconds
	// after it finished; zero (or less, which OpenKruise admits) deletes it
	// at once. Only with type Always.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty" protobuf:"varint,4,opt,name=ttlSecondsAfterFinished"`
}

// ImagePullJobTemplate is the part of an image pull job shared by ImagePullJob
// and ImageListPullJob: where, how and how fast to pull.
type ImagePullJobTemplate struct {
	// PullSecrets names Secrets in the job's namespace (of type
	// kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg) holding
	// registry credentials for the pull; a secret of any other type is not
	// used. At most 128 names.
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	PullSecrets []string `json:"pullSecrets,omitempty"`

	// Selector picks the nodes to pull on, by name or by node labels. Unset
	// means every node. Cannot be used together with podSelector.
	// +optional
	Selector *ImagePullJobNodeSelector `json:"selector,omitempty"`

	// PodSelector picks the nodes to pull on as the nodes running pods (in the
	// job's namespace) that match these labels. Cannot be used together with
	// selector.
	// +optional
	PodSelector *ImagePullJobPodSelector `json:"podSelector,omitempty"`

	// Parallelism is how many nodes may pull at the same time: a non-negative
	// integer, or a string of one as Go's strconv.ParseInt reads it (a sign
	// and leading zeros allowed, as OpenKruise accepts them; a percentage is
	// not accepted). Zero pauses the job. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : (self.matches('^[+]?0*[0-9]{1,10}$') && int(self) <= 2147483647) || self.matches('^-0+$')",message="parallelism must be a non-negative integer of at most 2147483647"
	// +optional
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`

	// PullPolicy bounds each pull: timeout and retries. Defaults to
	// timeoutSeconds 600 and backoffLimit 3.
	// +kubebuilder:default={}
	// +optional
	PullPolicy *PullPolicy `json:"pullPolicy,omitempty"`

	// CompletionPolicy says when the job is finished.
	CompletionPolicy CompletionPolicy `json:"completionPolicy"`

	// SandboxConfig is pod-sandbox metadata passed to the runtime with every
	// pull of this job.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`

	// ImagePullPolicy is Always (pull even if present) or IfNotPresent.
	// Defaults to IfNotPresent. Any other value (OpenKruise admits any)
	// pulls as Always does, as in OpenKruise.
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImagePullJobPodSelector selects pods by label; their nodes are pulled on.
type ImagePullJobPodSelector struct {
	// LabelSelector over pods in the job's namespace.
	metav1.LabelSelector `json:",inline"`
}

// ImagePullJobNodeSelector selects nodes either by name or by label, not both.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.names) && size(self.names) > 0 && (has(self.matchLabels) || has(self.matchExpressions)))",message="selector.names cannot be combined with matchLabels or matchExpressions"
type ImagePullJobNodeSelector struct {
	// Names lists the nodes to pull on. Entries must be unique.
	// +listType=set
	// +optional
	Names []string `json:"names,omitempty"`

	// LabelSelector over node labels.
	metav1.LabelSelector `json:",inline"`
}

// ImagePullJobSpec is the desired state of an ImagePullJob.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.selector) && has(self.podSelector))",message="selector and podSelector are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.completionPolicy.activeDeadlineSeconds) || !has(self.pullPolicy) || !has(self.pullPolicy.timeoutSeconds) || self.completionPolicy.activeDeadlineSeconds >= self.pullPolicy.timeoutSeconds",message="completionPolicy.activeDeadlineSeconds must be at least pullPolicy.timeoutSeconds (default 600)"
type ImagePullJobSpec struct {
	// Image is the image reference to pull, for example registry/repo:tag or
	// repo@sha256:digest.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	ImagePullJobTemplate `json:",inline"`
}

// ImagePullJobStatus is the observed progress of an ImagePullJob.
type ImagePullJobStatus struct {
	// StartTime is when the controller started handling the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Desired is the number of selected nodes, one pull task each.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Desired int32 `json:"desired"`

	// Active is the number of pull tasks under way.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Active int32 `json:"active"`

	// Succeeded is the number of nodes where the pull succeeded.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Succeeded int32 `json:"succeeded"`

	// Failed is the number of nodes where the pull failed.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Failed int32 `json:"failed"`

	// Message is a human-readable summary, such as why the job failed.
	// +optional
	Message string `json:"message,omitempty"`

	// FailedNodes names the nodes where the pull failed.
	// +optional
	FailedNodes []string `json:"failedNodes,omitempty"`

	// Failures says why the pull failed, for up to 16 of the failed nodes
	// (by node name); failedNodes lists them all. Not in OpenKruise.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Failures []NodeFailure `json:"failures,omitempty"`

	// OmittedFailures is the number of failed nodes left out of failures.
	// Not in OpenKruise.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	OmittedFailures int32 `json:"omittedFailures,omitempty"`
}

// MaxFailures is the most entries of ImagePullJobStatus.Failures, and
// MaxFailureMessage the most characters of one's message.
const (
	MaxFailures       = 16
	MaxFailureMessage = 512
)

// NodeFailure is why a pull failed on one node.
type NodeFailure struct {
	// Node is the node's name.
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`

	// Reason is a CamelCase word: NotFound, Unauthorized, Timeout,
	// Unavailable, Cancelled, PullFailed, InvalidPullSecret or
	// DeadlineExceeded (from the node's daemon, or the job's deadline), or
	// NodeImageFull (the node's NodeImage had no room for the job).
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message is the detail, at most 512 characters, as the node's daemon
	// reported it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// ImagePullJob pulls one image onto a set of nodes ahead of need, through the
// NodeImage of each node.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="IMAGE",type="string",JSONPath=".spec.image",description="Image to pull."
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="Number of nodes selected."
// +kubebuilder:printcolumn:name="ACTIVE",type="integer",JSONPath=".status.active",description="Number of pulls under way."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Number of nodes where the pull succeeded."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Number of nodes where the pull failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the job was created."
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message",priority=1,description="Summary of the job's state."
type ImagePullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to pull and where.
	Spec ImagePullJobSpec `json:"spec,omitempty"`
	// Status is the observed progress, written by the controller.
	Status ImagePullJobStatus `json:"status,omitempty"`
}

// ImagePullJobList is a list of ImagePullJob.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ImagePullJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePullJob `json:"items"`
}
