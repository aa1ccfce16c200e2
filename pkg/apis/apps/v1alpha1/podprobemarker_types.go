package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VirtualKubeletLabel=VirtualKubeletValue marks, as in OpenKruise, a serverless (virtual-kubelet)
// node: no kruise-daemon runs there, so it has no NodeImage and no NodePodProbe, and the sidecar
// terminator cannot restart containers on it.
const (
	VirtualKubeletLabel = "type"
	VirtualKubeletValue = "virtual-kubelet"
)

// Annotations and the finalizer OpenKruise gives these names; kruise keeps them so that
// objects and tools written for OpenKruise work unchanged.
const (
	// PodProbeMarkerAnnotationKey holds, on a pod of a serverless (virtual-kubelet) node, the
	// probes (JSON list of PodContainerProbe, markerPolicy left out) of the PodProbeMarkers that
	// select it, for the virtual node to run.
	PodProbeMarkerAnnotationKey = "kruise.io/podprobe"
	// PodProbeMarkerListAnnotationKey names, comma separated, the PodProbeMarkers whose probes
	// PodProbeMarkerAnnotationKey holds.
	PodProbeMarkerListAnnotationKey = "kruise.io/podprobemarker-list"
	// PodProbeMarkerFinalizer keeps a PodProbeMarker until its probes are off every node and its
	// marks off every pod.
	PodProbeMarkerFinalizer = "kruise.io/node-pod-probe-cleanup"
	// UsingEnhancedLivenessAnnotation: "true" on a pod (created by a kruise workload) hands its
	// containers' liveness probes from the kubelet to kruise-daemon.
	UsingEnhancedLivenessAnnotation = "apps.kruise.io/using-enhanced-liveness"
	// ContainerProbeContextAnnotation holds, as JSON [{"name": container, "livenessProbe": probe}],
	// the liveness probes taken off the containers of such a pod at its creation.
	ContainerProbeContextAnnotation = "apps.kruise.io/container-probe-context"
)

// PodProbeMarkerSpec says which pods are probed, with which probes, and what each result marks.
type PodProbeMarkerSpec struct {
	// Selector chooses the pods, in the PodProbeMarker's namespace.
	Selector *metav1.LabelSelector `json:"selector"`

	// Probes run in each selected pod. At most 256 (OpenKruise sets no bound; the API server's
	// budget for the probes' CEL rules needs one).
	// +kubebuilder:validation:MaxItems=256
	// +patchMergeKey=name
	// +patchStrategy=merge
	Probes []PodContainerProbe `json:"probes" patchStrategy:"merge" patchMergeKey:"name"`
}

// PodContainerProbe is one probe of one container and what its result marks on the pod.
type PodContainerProbe struct {
	// Name is unique among the PodProbeMarker's probes.
	Name string `json:"name"`

	// ContainerName is the container probed.
	ContainerName string `json:"containerName"`

	// Probe is what is run: exec, tcpSocket or httpGet, with the kubelet's timing fields. Its
	// 32-bit numbers are bounded (the API server would store larger ones, which no Go client can
	// then decode).
	// +kubebuilder:validation:XValidation:rule="!has(self.initialDelaySeconds) || (self.initialDelaySeconds >= -2147483648 && self.initialDelaySeconds <= 2147483647)",message="initialDelaySeconds must be a 32-bit integer"
	// +kubebuilder:validation:XValidation:rule="!has(self.timeoutSeconds) || (self.timeoutSeconds >= -2147483648 && self.timeoutSeconds <= 2147483647)",message="timeoutSeconds must be a 32-bit integer"
	// +kubebuilder:validation:XValidation:rule="!has(self.periodSeconds) || (self.periodSeconds >= -2147483648 && self.periodSeconds <= 2147483647)",message="periodSeconds must be a 32-bit integer"
	// +kubebuilder:validation:XValidation:rule="!has(self.successThreshold) || (self.successThreshold >= -2147483648 && self.successThreshold <= 2147483647)",message="successThreshold must be a 32-bit integer"
	// +kubebuilder:validation:XValidation:rule="!has(self.failureThreshold) || (self.failureThreshold >= -2147483648 && self.failureThreshold <= 2147483647)",message="failureThreshold must be a 32-bit integer"
	// +kubebuilder:validation:XValidation:rule="(!has(self.httpGet) || !has(self.httpGet.port) || type(self.httpGet.port) == string || (self.httpGet.port >= -2147483648 && self.httpGet.port <= 2147483647)) && (!has(self.tcpSocket) || !has(self.tcpSocket.port) || type(self.tcpSocket.port) == string || (self.tcpSocket.port >= -2147483648 && self.tcpSocket.port <= 2147483647)) && (!has(self.grpc) || (self.grpc.port >= -2147483648 && self.grpc.port <= 2147483647))",message="the probe's ports must be 32-bit integers or port names"
	Probe ContainerProbeSpec `json:"probe"`

	// MarkerPolicy gives the labels and annotations set on the pod while the probe is in a state.
	// +patchMergeKey=state
	// +patchStrategy=merge
	// +optional
	MarkerPolicy []ProbeMarkerPolicy `json:"markerPolicy,omitempty" patchStrategy:"merge" patchMergeKey:"state"`

	// PodConditionType, when set, is the type of the pod condition that is True while the probe
	// succeeds and False otherwise.
	// +optional
	PodConditionType string `json:"podConditionType,omitempty"`
}

// ContainerProbeSpec is a container probe as the kubelet's.
type ContainerProbeSpec struct {
	corev1.Probe `json:",inline"`
}

// ProbeMarkerPolicy is the labels and annotations a pod carries while its probe is in State.
type ProbeMarkerPolicy struct {
	// State is Succeeded or Failed.
	State ProbeState `json:"state"`

	// Labels set on the pod.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations set on the pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodProbeMarkerStatus is what the controller last observed.
type PodProbeMarkerStatus struct {
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration"`

	// MatchedPods is how many pods the selector matches.
	// +optional
	MatchedPods int64 `json:"matchedPods,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// PodProbeMarker runs probes the kubelet cannot express in the pods it selects (through
// kruise-daemon on their nodes) and marks each pod with the results: a pod condition, labels,
// annotations.
type PodProbeMarker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodProbeMarkerSpec   `json:"spec,omitempty"`
	Status PodProbeMarkerStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PodProbeMarkerList is a list of PodProbeMarkers.
type PodProbeMarkerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodProbeMarker `json:"items"`
}
