package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The v1beta1 ContainerRecreateRequest has OpenKruise 1.9's v1beta1 shape.
// It has the same fields as kruise's v1alpha1 (pkg/apis/apps/v1alpha1,
// where each is described at length): OpenKruise moved two annotations of
// its v1alpha1 into status here (status.containerStatusSnapshot and the
// PreRecreateGrace condition), and kruise's v1alpha1 carries both status
// fields too, so the API server converts between the versions by
// rewriting apiVersion alone and loses nothing (docs/api.md, "Versions and
// conversion").

// Condition types of a ContainerRecreateRequest's status.
const (
	// ContainerRecreateRequestPreRecreateGraceType is True once the pod has
	// been marked not-ready for the request (strategy.
	// unreadyGracePeriodSeconds); its lastTransitionTime is when. v1alpha1
	// clients also find it in the crr.apps.kruise.io/unready-acquired
	// annotation.
	ContainerRecreateRequestPreRecreateGraceType = "PreRecreateGrace"
)

// ContainerRecreateRequestSpec is what the user asks to be recreated. The
// whole spec is immutable once created, except that the fields kruise fills
// in per container may be set once.
//
// +kubebuilder:validation:XValidation:rule="has(self.strategy) == has(oldSelf.strategy) && (!has(self.strategy) || self.strategy == oldSelf.strategy)",message="spec.strategy is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.activeDeadlineSeconds) == has(oldSelf.activeDeadlineSeconds) && (!has(self.activeDeadlineSeconds) || self.activeDeadlineSeconds == oldSelf.activeDeadlineSeconds)",message="spec.activeDeadlineSeconds is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.ttlSecondsAfterFinished) == has(oldSelf.ttlSecondsAfterFinished) && (!has(self.ttlSecondsAfterFinished) || self.ttlSecondsAfterFinished == oldSelf.ttlSecondsAfterFinished)",message="spec.ttlSecondsAfterFinished is immutable"
type ContainerRecreateRequestSpec struct {
	// PodName is the pod, in the request's namespace. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.podName is immutable"
	PodName string `json:"podName"`

	// Containers of the pod to recreate, by name (in this order with
	// strategy.orderedRecreate). Names and order are immutable.
	// +listType=map
	// +listMapKey=name
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:XValidation:rule="self.map(c, c.name) == oldSelf.map(c, c.name)",message="the containers of a ContainerRecreateRequest cannot be added, removed or reordered"
	Containers []ContainerRecreateRequestContainer `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`

	// Strategy tunes how the containers are stopped. Defaults to {}
	// (failurePolicy Fail).
	// +kubebuilder:default={}
	// +optional
	Strategy *ContainerRecreateRequestStrategy `json:"strategy,omitempty"`

	// ActiveDeadlineSeconds bounds how long the request may run, from its
	// creation. At least 3.
	// +kubebuilder:validation:Minimum=3
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished deletes the request this long after it
	// completed (at once when 0 or less).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ContainerRecreateRequestContainer names one container to recreate. The
// other fields are filled in by kruise-controller from the pod when it
// admits the request, and are read-only to the creator.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.preStop) || (has(self.preStop) && self.preStop == oldSelf.preStop)",message="preStop may be set once and cannot change afterwards"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.ports) || (has(self.ports) && self.ports == oldSelf.ports)",message="ports may be set once and cannot change afterwards"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.statusContext) || (has(self.statusContext) && self.statusContext == oldSelf.statusContext)",message="statusContext may be set once and cannot change afterwards"
type ContainerRecreateRequestContainer struct {
	// Name of a container in the pod's spec.containers.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// PreStop is a copy of the container's preStop hook (informational: the
	// daemon runs the pod's own).
	// +optional
	PreStop *CRRProbeHandler `json:"preStop,omitempty"`

	// Ports is a copy of the container's ports (at most 128: of a container
	// with more, the ports its httpGet hook names).
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.containerPort >= -2147483648 && p.containerPort <= 2147483647 && (!has(p.hostPort) || (p.hostPort >= -2147483648 && p.hostPort <= 2147483647)))",message="containerPort and hostPort must be 32-bit integers"
	// +optional
	Ports []corev1.ContainerPort `json:"ports,omitempty"`

	// StatusContext identifies the container instance to replace.
	// +optional
	StatusContext *ContainerRecreateRequestContainerContext `json:"statusContext,omitempty"`
}

// CRRProbeHandler is a preStop hook: at most one member is set. (OpenKruise
// renamed v1alpha1's ProbeHandler; the JSON is the same.)
//
// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || !has(self.httpGet.port) || type(self.httpGet.port) == string || (self.httpGet.port >= -2147483648 && self.httpGet.port <= 2147483647)",message="httpGet.port must be a 32-bit integer or a port name"
// +kubebuilder:validation:XValidation:rule="!has(self.tcpSocket) || !has(self.tcpSocket.port) || type(self.tcpSocket.port) == string || (self.tcpSocket.port >= -2147483648 && self.tcpSocket.port <= 2147483647)",message="tcpSocket.port must be a 32-bit integer or a port name"
type CRRProbeHandler struct {
	// Exec runs a command inside the container.
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty" protobuf:"bytes,1,opt,name=exec"`
	// HTTPGet sends an HTTP GET request.
	// +optional
	HTTPGet *corev1.HTTPGetAction `json:"httpGet,omitempty" protobuf:"bytes,2,opt,name=httpGet"`
	// TCPSocket opens a TCP connection (does nothing, as in the kubelet).
	// +optional
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty" protobuf:"bytes,3,opt,name=tcpSocket"`
}

// ContainerRecreateRequestContainerContext identifies one running instance
// of a container.
type ContainerRecreateRequestContainerContext struct {
	// ContainerID with its scheme, e.g. 'containerd://<id>'.
	// +kubebuilder:validation:MaxLength=256
	ContainerID string `json:"containerID"`
	// RestartCount as the pod status reported it then.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	RestartCount int32 `json:"restartCount"`
}

// ContainerRecreateRequestStrategy tunes how containers are recreated.
type ContainerRecreateRequestStrategy struct {
	// FailurePolicy: Fail (default) stops at the first failed container,
	// Ignore goes on.
	// +kubebuilder:validation:Enum=Fail;Ignore
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy ContainerRecreateRequestFailurePolicyType `json:"failurePolicy,omitempty"`
	// OrderedRecreate recreates the containers one after another.
	// +optional
	OrderedRecreate bool `json:"orderedRecreate,omitempty"`
	// ForceRecreate stops a container even while it is still starting.
	// +optional
	ForceRecreate bool `json:"forceRecreate,omitempty"`
	// TerminationGracePeriodSeconds for stopping; unset: the pod's.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// UnreadyGracePeriodSeconds marks the pod not-ready this long before
	// the first container is stopped.
	// +kubebuilder:validation:Minimum=0
	// +optional
	UnreadyGracePeriodSeconds *int64 `json:"unreadyGracePeriodSeconds,omitempty"`
	// MinStartedSeconds a new container must run ready before it counts as
	// Succeeded (a value below 0 is read as 0).
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	MinStartedSeconds int32 `json:"minStartedSeconds,omitempty"`
}

// ContainerRecreateRequestFailurePolicyType is the value of strategy.failurePolicy.
type ContainerRecreateRequestFailurePolicyType string

// Failure policies.
const (
	ContainerRecreateRequestFailurePolicyFail   ContainerRecreateRequestFailurePolicyType = "Fail"
	ContainerRecreateRequestFailurePolicyIgnore ContainerRecreateRequestFailurePolicyType = "Ignore"
)

// ContainerRecreateRequestStatus is what kruise reports about a request.
//
// +kubebuilder:validation:XValidation:rule="oldSelf.phase != 'Completed' || self.phase == 'Completed'",message="a Completed ContainerRecreateRequest cannot change phase"
type ContainerRecreateRequestStatus struct {
	// Phase of the request: Pending, Recreating, Completed (final). The
	// schema admits every phase value, as OpenKruise's v1beta1 does.
	// +kubebuilder:validation:Enum=Pending;Recreating;Succeeded;Failed;Completed
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// CompletionTime is when the request completed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message explains the phase, e.g. why the request completed early.
	// +optional
	Message string `json:"message,omitempty"`
	// ContainerRecreateStates is the progress of each container.
	// +optional
	ContainerRecreateStates []ContainerRecreateRequestContainerRecreateState `json:"containerRecreateStates,omitempty"`
	// ContainerStatusSnapshot holds, for the request's containers whose
	// running instance started after the request was created (recreated),
	// that instance's status copied from the pod: name, ready, restartCount,
	// containerID. Written when the request completes (OpenKruise's
	// controller also keeps it current while Recreating, for its daemon;
	// kruise's daemon reads the pod itself).
	// +kubebuilder:validation:MaxItems=128
	// +optional
	ContainerStatusSnapshot []ContainerRecreateRequestSyncContainerStatus `json:"containerStatusSnapshot,omitempty"`
	// Conditions: Admitted (kruise-controller's admission, as in v1alpha1)
	// and PreRecreateGrace (the pod was marked not-ready for the request).
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// CreationRevision orders the requests of one pod created within the
	// same second (a kruise extension, as in v1alpha1).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	CreationRevision string `json:"creationRevision,omitempty"`
}

// ContainerRecreateRequestPhase is the phase of a request or of one container.
type ContainerRecreateRequestPhase string

// Phases.
const (
	ContainerRecreateRequestPending    ContainerRecreateRequestPhase = "Pending"
	ContainerRecreateRequestRecreating ContainerRecreateRequestPhase = "Recreating"
	ContainerRecreateRequestSucceeded  ContainerRecreateRequestPhase = "Succeeded"
	ContainerRecreateRequestFailed     ContainerRecreateRequestPhase = "Failed"
	ContainerRecreateRequestCompleted  ContainerRecreateRequestPhase = "Completed"
)

// ContainerRecreateRequestContainerRecreateState is the progress of one container.
type ContainerRecreateRequestContainerRecreateState struct {
	// Name of the container.
	Name string `json:"name"`
	// Phase: Pending, Recreating, Succeeded or Failed (the schema admits
	// Completed too, as OpenKruise's v1beta1 does).
	// +kubebuilder:validation:Enum=Pending;Recreating;Succeeded;Failed;Completed
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// Message, typically why the container failed.
	// +optional
	Message string `json:"message,omitempty"`
	// IsKilled is true once the old instance has been stopped.
	// +optional
	IsKilled bool `json:"isKilled,omitempty"`
}

// ContainerRecreateRequestSyncContainerStatus is one container's status as
// copied from the pod.
type ContainerRecreateRequestSyncContainerStatus struct {
	// Name of the container.
	Name string `json:"name"`
	// Ready as the pod status reported it.
	Ready bool `json:"ready"`
	// RestartCount as the pod status reported it.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	RestartCount int32 `json:"restartCount"`
	// ContainerID as the pod status reported it.
	// +optional
	ContainerID string `json:"containerID,omitempty"`
}

// ContainerRecreateRequest asks the node daemon to recreate some containers
// of a running pod in place.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=crr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase",description="Phase of the request."
// +kubebuilder:printcolumn:name="POD",type="string",JSONPath=".spec.podName",description="Pod whose containers are recreated."
// +kubebuilder:printcolumn:name="NODE",type="string",JSONPath=".metadata.labels.crr\\.apps\\.kruise\\.io/node-name",description="Node the pod runs on."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since the request was created."
type ContainerRecreateRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired recreation.
	Spec ContainerRecreateRequestSpec `json:"spec,omitempty"`
	// Status is the observed progress, written by kruise.
	Status ContainerRecreateRequestStatus `json:"status,omitempty"`
}

// ContainerRecreateRequestList is a list of ContainerRecreateRequest.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ContainerRecreateRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContainerRecreateRequest `json:"items"`
}
