package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePodProbeSpec lists the probes kruise-daemon runs on one node. kruise-controller writes it.
type NodePodProbeSpec struct {
	// PodProbes are the node's probed pods.
	// +optional
	PodProbes []PodProbe `json:"podProbes,omitempty"`
}

// PodProbe is one pod's probes.
type PodProbe struct {
	// Name of the pod.
	Name string `json:"name"`
	// Namespace of the pod.
	Namespace string `json:"namespace"`
	// UID of the pod: a recreated pod of the same name is another entry.
	UID string `json:"uid"`
	// IP of the pod, the only address TCP and HTTP probes reach.
	IP string `json:"IP"`
	// Probes of the pod's containers.
	// +optional
	Probes []ContainerProbe `json:"probes,omitempty"`
}

// ContainerProbe is one probe of one container.
type ContainerProbe struct {
	// Name is <PodProbeMarker name>#<probe name>.
	Name string `json:"name"`
	// ContainerName is the container probed.
	ContainerName string `json:"containerName"`
	// Probe is what is run.
	Probe ContainerProbeSpec `json:"probe"`
}

// NodePodProbeStatus holds the results kruise-daemon reports.
type NodePodProbeStatus struct {
	// PodProbeStatuses are the results per pod.
	// +optional
	PodProbeStatuses []PodProbeStatus `json:"podProbeStatuses,omitempty"`
}

// PodProbeStatus is one pod's results.
type PodProbeStatus struct {
	// Name of the pod.
	Name string `json:"name"`
	// Namespace of the pod.
	Namespace string `json:"namespace"`
	// UID of the pod.
	UID string `json:"uid"`
	// ProbeStates are the results of its probes.
	// +optional
	ProbeStates []ContainerProbeState `json:"probeStates,omitempty"`
}

// ContainerProbeState is the result of one probe.
type ContainerProbeState struct {
	// Name is the probe's, as in the spec.
	Name string `json:"name"`
	// State is Succeeded, Failed or Unknown.
	State ProbeState `json:"state"`
	// LastProbeTime is when the result was last reported.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is when State last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Message is a short reason for the result (kruise never reports a command's output).
	// +optional
	Message string `json:"message,omitempty"`
}

// ProbeState is a probe's result.
type ProbeState string

// The results of a probe.
const (
	ProbeSucceeded ProbeState = "Succeeded"
	ProbeFailed    ProbeState = "Failed"
	ProbeUnknown   ProbeState = "Unknown"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status

// NodePodProbe, named after its node, is the work list of that node's kruise-daemon prober and
// the results it reports.
type NodePodProbe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodePodProbeSpec   `json:"spec,omitempty"`
	Status NodePodProbeStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodePodProbeList is a list of NodePodProbes.
type NodePodProbeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePodProbe `json:"items"`
}
