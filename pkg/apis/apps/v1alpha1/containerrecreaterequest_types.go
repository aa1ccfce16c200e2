package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations carried by a ContainerRecreateRequest. The keys are
// the ones OpenKruise uses, so tooling written for it keeps working.
const (
	// ContainerRecreateRequestPodUIDKey is a label holding the UID of the target
	// pod. It is set when the request is admitted and never changes.
	ContainerRecreateRequestPodUIDKey = "crr.apps.kruise.io/pod-uid"
	// ContainerRecreateRequestNodeNameKey is a label holding the node the target
	// pod runs on. The node daemon watches only requests with its own node name.
	ContainerRecreateRequestNodeNameKey = "crr.apps.kruise.io/node-name"
	// ContainerRecreateRequestActiveKey is a label ("true") present while the
	// request is not finished. It is removed on completion so that node daemons
	// stop receiving the object.
	ContainerRecreateRequestActiveKey = "crr.apps.kruise.io/active"
	// ContainerRecreateRequestSyncContainerStatusesKey is an annotation with a
	// JSON list of ContainerRecreateRequestSyncContainerStatus that
	// OpenKruise's controller copies from the pod for its daemon. kruise's
	// daemon reads the pod; kruise does not write it.
	ContainerRecreateRequestSyncContainerStatusesKey = "crr.apps.kruise.io/sync-container-statuses"
	// ContainerRecreateRequestUnreadyAcquiredKey is an annotation recording that
	// the pod has been marked not-ready for this request (used with
	// strategy.unreadyGracePeriodSeconds). Once set it must not change.
	ContainerRecreateRequestUnreadyAcquiredKey = "crr.apps.kruise.io/unready-acquired"
)

// Condition types and reasons of a ContainerRecreateRequest's status.
const (
	// ContainerRecreateRequestAdmitted is True once kruise-controller has
	// admitted the request: only it writes this condition, and status can
	// only be written through the status subresource, which the request's
	// creator is not expected to hold.
	ContainerRecreateRequestAdmitted = "Admitted"
	// ContainerRecreateRequestReasonAdmitted is the reason of a True
	// Admitted condition.
	ContainerRecreateRequestReasonAdmitted = "PodRunning"
	// ContainerRecreateRequestReasonWaitingForPod is the reason of a False
	// Admitted condition: the pod is scheduled or starting, and the request
	// waits for it to run.
	ContainerRecreateRequestReasonWaitingForPod = "WaitingForPod"
	// ContainerRecreateRequestPreRecreateGrace is True once the pod has been
	// marked not-ready for the request; its lastTransitionTime is when (the
	// unready-acquired annotation, in the form OpenKruise's v1beta1 has it).
	ContainerRecreateRequestPreRecreateGrace = "PreRecreateGrace"
)

// KruisePodReadyConditionType is the pod condition type (OpenKruise's name)
// that kruise-controller sets to False while a request with
// strategy.unreadyGracePeriodSeconds recreates containers, and back to True
// afterwards. It makes the pod not-ready only when the pod lists it in
// spec.readinessGates.
const KruisePodReadyConditionType corev1.PodConditionType = "KruisePodReady"

// Bounds of a ContainerRecreateRequest's lists. The CEL rules on the
// containers and their ports need bounds for the API server to estimate
// their cost; these are far beyond any real pod (which has no such bound:
// see docs/api.md). The markers below repeat these numbers.
const (
	// MaxContainersPerRequest bounds spec.containers.
	MaxContainersPerRequest = 1024
	// MaxPortsPerContainer bounds spec.containers[].ports. kruise-controller
	// copies a container's ports only when it declares at most this many;
	// otherwise it copies those its httpGet preStop hook names.
	MaxPortsPerContainer = 128
)

// ContainerRecreateRequestSpec is what the user asks to be recreated.
//
// The whole spec is immutable once created, with one exception: per container,
// the fields the system fills in (preStop, ports, statusContext) may be set once
// while still empty.
//
// +kubebuilder:validation:XValidation:rule="has(self.strategy) == has(oldSelf.strategy) && (!has(self.strategy) || self.strategy == oldSelf.strategy)",message="spec.strategy is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.activeDeadlineSeconds) == has(oldSelf.activeDeadlineSeconds) && (!has(self.activeDeadlineSeconds) || self.activeDeadlineSeconds == oldSelf.activeDeadlineSeconds)",message="spec.activeDeadlineSeconds is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.ttlSecondsAfterFinished) == has(oldSelf.ttlSecondsAfterFinished) && (!has(self.ttlSecondsAfterFinished) || self.ttlSecondsAfterFinished == oldSelf.ttlSecondsAfterFinished)",message="spec.ttlSecondsAfterFinished is immutable"
type ContainerRecreateRequestSpec struct {
	// PodName is the name of the pod, in the request's namespace, whose
	// containers are to be recreated. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.podName is immutable"
	PodName string `json:"podName"`

	// Containers lists the containers of the pod to recreate, by name. With
	// strategy.orderedRecreate they are handled in this order. The names and
	// their order are immutable.
	// +listType=map
	// +listMapKey=name
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:XValidation:rule="self.map(c, c.name) == oldSelf.map(c, c.name)",message="the containers of a ContainerRecreateRequest cannot be added, removed or reordered"
	Containers []ContainerRecreateRequestContainer `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`

	// Strategy tunes how the containers are stopped and when the request counts
	// as done. Defaults to an empty strategy (failurePolicy Fail).
	// +kubebuilder:default={}
	// +optional
	Strategy *ContainerRecreateRequestStrategy `json:"strategy,omitempty"`

	// ActiveDeadlineSeconds bounds how long the request may run, counted from
	// its creation. When it passes, the request is completed and the containers
	// not yet recreated are marked Failed. At least 3 seconds.
	// +kubebuilder:validation:Minimum=3
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished, when set, deletes the request this many seconds
	// after it reached the Completed phase; zero (or less, which OpenKruise
	// admits) deletes it at once.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ContainerRecreateRequestContainer names one container to recreate. Apart from
// the name, its fields are filled in by the system from the pod when the request
// is admitted; each of them may be set once and is read-only afterwards.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.preStop) || (has(self.preStop) && self.preStop == oldSelf.preStop)",message="preStop may be set once and cannot change afterwards"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.ports) || (has(self.ports) && self.ports == oldSelf.ports)",message="ports may be set once and cannot change afterwards"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.statusContext) || (has(self.statusContext) && self.statusContext == oldSelf.statusContext)",message="statusContext may be set once and cannot change afterwards"
type ContainerRecreateRequestContainer struct {
	// Name of a container in the pod's spec.containers.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// PreStop is a copy of the container's preStop hook, taken from the pod
	// spec when the request is admitted, and run before the container is
	// stopped. Filled in by the system; read-only once set.
	// +optional
	PreStop *ProbeHandler `json:"preStop,omitempty"`

	// Ports is a copy of the container's ports, taken from the pod spec, so that
	// a named port in an httpGet preStop hook can be resolved (at most 128: of
	// a container with more, the ports its httpGet hook names). Filled in by
	// the system; read-only once set.
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.containerPort >= -2147483648 && p.containerPort <= 2147483647 && (!has(p.hostPort) || (p.hostPort >= -2147483648 && p.hostPort <= 2147483647)))",message="containerPort and hostPort must be 32-bit integers"
	// +optional
	Ports []corev1.ContainerPort `json:"ports,omitempty"`

	// StatusContext identifies the container instance to be replaced: the
	// container ID and restart count seen in the pod status when the request
	// was admitted. Filled in by the system; read-only once set.
	// +optional
	StatusContext *ContainerRecreateRequestContainerContext `json:"statusContext,omitempty"`
}

// ProbeHandler is the action run as a preStop hook before a container is
// stopped. At most one of its members is set.
//
// The port rules keep numbers within 32 bits: the API server would store a
// larger one, which no client can then decode, and a single such object
// would stop every kruise component from listing CRRs.
//
// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || !has(self.httpGet.port) || type(self.httpGet.port) == string || (self.httpGet.port >= -2147483648 && self.httpGet.port <= 2147483647)",message="httpGet.port must be a 32-bit integer or a port name"
// +kubebuilder:validation:XValidation:rule="!has(self.tcpSocket) || !has(self.tcpSocket.port) || type(self.tcpSocket.port) == string || (self.tcpSocket.port >= -2147483648 && self.tcpSocket.port <= 2147483647)",message="tcpSocket.port must be a 32-bit integer or a port name"
type ProbeHandler struct {
	// Exec runs a command inside the container.
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty" protobuf:"bytes,1,opt,name=exec"`
	// HTTPGet sends an HTTP GET request; the host defaults to the pod IP.
	// +optional
	HTTPGet *corev1.HTTPGetAction `json:"httpGet,omitempty" protobuf:"bytes,2,opt,name=httpGet"`
	// TCPSocket opens a TCP connection. Kept for compatibility; like the
	// kubelet, a TCP preStop hook does nothing.
	// +optional
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty" protobuf:"bytes,3,opt,name=tcpSocket"`
}

// ContainerRecreateRequestContainerContext identifies one running instance of a
// container.
type ContainerRecreateRequestContainerContext struct {
	// ContainerID is the runtime's ID of the container instance, with its
	// scheme, for example 'containerd://<id>'.
	// +kubebuilder:validation:MaxLength=256
	ContainerID string `json:"containerID"`
	// RestartCount is the container's restart count as reported in the pod
	// status at that time.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	RestartCount int32 `json:"restartCount"`
}

// ContainerRecreateRequestStrategy tunes how containers are recreated.
type ContainerRecreateRequestStrategy struct {
	// FailurePolicy says what to do when a container fails to be recreated:
	// Fail stops and fails the remaining containers, Ignore goes on with the
	// next one. Defaults to Fail.
	// +kubebuilder:validation:Enum=Fail;Ignore
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy ContainerRecreateRequestFailurePolicyType `json:"failurePolicy,omitempty"`

	// OrderedRecreate, when true, recreates the containers one after another in
	// the order listed, starting the next only after the previous one has
	// been recreated successfully.
	// +optional
	OrderedRecreate bool `json:"orderedRecreate,omitempty"`

	// ForceRecreate, when true, stops the container even if it is still
	// starting (not yet ready) from an earlier restart.
	// +optional
	ForceRecreate bool `json:"forceRecreate,omitempty"`

	// TerminationGracePeriodSeconds is how long a container may take to stop
	// gracefully, preStop hook included, before it is killed. Zero means kill
	// at once. When unset, the pod's terminationGracePeriodSeconds applies.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// UnreadyGracePeriodSeconds, when set, marks the pod not-ready first and
	// waits this many seconds (so that endpoints drain) before running the
	// preStop hook and stopping the container.
	// +kubebuilder:validation:Minimum=0
	// +optional
	UnreadyGracePeriodSeconds *int64 `json:"unreadyGracePeriodSeconds,omitempty"`

	// MinStartedSeconds is how long a new container must have been running and
	// ready, without crashing, before it counts as Succeeded. Defaults to 0:
	// Succeeded as soon as it is started and ready. A value below 0 (which
	// OpenKruise admits) is read as 0.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	MinStartedSeconds int32 `json:"minStartedSeconds,omitempty"`
}

// ContainerRecreateRequestFailurePolicyType is the value of strategy.failurePolicy.
type ContainerRecreateRequestFailurePolicyType string

const (
	// ContainerRecreateRequestFailurePolicyFail stops at the first container
	// that fails and fails the rest.
	ContainerRecreateRequestFailurePolicyFail ContainerRecreateRequestFailurePolicyType = "Fail"
	// ContainerRecreateRequestFailurePolicyIgnore carries on with the other
	// containers when one fails.
	ContainerRecreateRequestFailurePolicyIgnore ContainerRecreateRequestFailurePolicyType = "Ignore"
)

// ContainerRecreateRequestStatus is what the system reports about a request.
//
// +kubebuilder:validation:XValidation:rule="oldSelf.phase != 'Completed' || self.phase == 'Completed'",message="a Completed ContainerRecreateRequest cannot change phase"
type ContainerRecreateRequestStatus struct {
	// Phase of the whole request: Pending until a node daemon picks it up,
	// Recreating while containers are being replaced, Completed when finished
	// (successfully or not). Completed is final.
	// +kubebuilder:validation:Enum=Pending;Recreating;Completed
	Phase ContainerRecreateRequestPhase `json:"phase"`

	// CompletionTime is when the request reached the Completed phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Message is a human-readable explanation of the current phase, such as
	// why the request was completed early.
	// +optional
	Message string `json:"message,omitempty"`

	// ContainerRecreateStates reports the progress of each container.
	// +optional
	ContainerRecreateStates []ContainerRecreateRequestContainerRecreateState `json:"containerRecreateStates,omitempty"`

	// Conditions of the request (a kruise extension; OpenKruise's v1alpha1
	// has none). Condition Admitted is written by kruise-controller only:
	// True once it has checked the request against its pod and routed it to
	// the pod's node, False (reason WaitingForPod) while the pod is still
	// starting. kruise-daemon acts on a request only once it is True.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ContainerStatusSnapshot is v1beta1's field of that name, here so that
	// the two versions share one schema and convert losslessly (a kruise
	// extension; OpenKruise's v1alpha1 keeps it in the
	// crr.apps.kruise.io/sync-container-statuses annotation): for the
	// containers whose running instance started after the request was
	// created, that instance's status from the pod. Written when the request
	// completes.
	// +kubebuilder:validation:MaxItems=128
	// +optional
	ContainerStatusSnapshot []ContainerRecreateRequestSyncContainerStatus `json:"containerStatusSnapshot,omitempty"`

	// CreationRevision is the resourceVersion the request had when
	// kruise-controller first saw it, before anything but its creator wrote
	// it: requests for one pod created within the same second (creation
	// timestamps have one-second resolution) run in the order of their
	// creation revisions. Written once by kruise-controller (a kruise
	// extension).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	CreationRevision string `json:"creationRevision,omitempty"`
}

// ContainerRecreateRequestPhase is the phase of a request or of one container.
type ContainerRecreateRequestPhase string

const (
	// ContainerRecreateRequestPending means work has not started (request or container).
	ContainerRecreateRequestPending ContainerRecreateRequestPhase = "Pending"
	// ContainerRecreateRequestRecreating means work is under way (request or container).
	ContainerRecreateRequestRecreating ContainerRecreateRequestPhase = "Recreating"
	// ContainerRecreateRequestSucceeded means a container was recreated and is running again.
	ContainerRecreateRequestSucceeded ContainerRecreateRequestPhase = "Succeeded"
	// ContainerRecreateRequestFailed means a container could not be recreated.
	ContainerRecreateRequestFailed ContainerRecreateRequestPhase = "Failed"
	// ContainerRecreateRequestCompleted means the whole request is finished. It is final.
	ContainerRecreateRequestCompleted ContainerRecreateRequestPhase = "Completed"
)

// ContainerRecreateRequestContainerRecreateState is the progress of one container.
type ContainerRecreateRequestContainerRecreateState struct {
	// Name of the container.
	Name string `json:"name"`

	// Phase of this container: Pending, Recreating, Succeeded or Failed.
	// +kubebuilder:validation:Enum=Pending;Recreating;Succeeded;Failed
	Phase ContainerRecreateRequestPhase `json:"phase"`

	// Message is a human-readable detail, typically why the container failed.
	// +optional
	Message string `json:"message,omitempty"`

	// IsKilled is true once the node daemon has stopped the old container
	// instance, so that it is not stopped a second time.
	// +optional
	IsKilled bool `json:"isKilled,omitempty"`
}

// ContainerRecreateRequestSyncContainerStatus is one element of the JSON list
// stored in the crr.apps.kruise.io/sync-container-statuses annotation.
type ContainerRecreateRequestSyncContainerStatus struct {
	// Name of the container.
	Name string `json:"name"`
	// Ready is the container's readiness as reported in the pod status.
	Ready bool `json:"ready"`
	// RestartCount is the container's restart count from the pod status.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	RestartCount int32 `json:"restartCount"`
	// ContainerID is the current container ID from the pod status.
	ContainerID string `json:"containerID,omitempty"`
}

// ContainerRecreateRequest asks the node daemon to recreate (stop, and let the
// kubelet start again) some containers of a running pod in place, without
// deleting the pod.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
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
	// Status is the observed progress, written by the system.
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
