package v1alpha1

import corev1 "k8s.io/api/core/v1"

// The container a SidecarSet injects, with how it is placed, upgraded and
// given the pod's volumes, env and resources.

// SidecarContainer is a container to inject, with how to inject and upgrade
// it. The container itself is schemaless, as in OpenKruise (the webhook
// validates it); the fields beside it have a schema.
type SidecarContainer struct {
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	corev1.Container `json:",inline"`

	// PodInjectPolicy places the container before or after the pod's own
	// containers (init containers, for one of initContainers). Unset: the
	// default of its list (containers before, initContainers after).
	// +optional
	PodInjectPolicy PodInjectPolicyType `json:"podInjectPolicy,omitempty"`

	// UpgradeStrategy is how the container is upgraded in place.
	// +kubebuilder:default={}
	// +optional
	UpgradeStrategy SidecarContainerUpgradeStrategy `json:"upgradeStrategy,omitempty"`

	// ShareVolumePolicy enabled mounts the volumeMounts of the pod's other
	// containers (not the injected ones) into this one too.
	// +kubebuilder:default={}
	// +optional
	ShareVolumePolicy ShareVolumePolicy `json:"shareVolumePolicy,omitempty"`

	// ShareVolumeDevicePolicy enabled does the same for volumeDevices. A
	// pointer, as in OpenKruise, so that leaving it out does not change the
	// SidecarSet's hash.
	// +optional
	ShareVolumeDevicePolicy *ShareVolumePolicy `json:"shareVolumeDevicePolicy,omitempty"`

	// TransferEnv copies env vars of another of the pod's containers into
	// this one.
	// +optional
	TransferEnv []TransferEnvVar `json:"transferEnv,omitempty"`

	// ResourcesPolicy computes the container's resources from those of the
	// pod's containers at injection (not together with resources).
	// +optional
	ResourcesPolicy *ResourcesPolicy `json:"resourcesPolicy,omitempty"`
}

// PodInjectPolicyType places an injected container among the pod's.
type PodInjectPolicyType string

const (
	// BeforeAppContainerType puts it before the pod's containers.
	BeforeAppContainerType PodInjectPolicyType = "BeforeAppContainer"
	// AfterAppContainerType puts it after the pod's containers.
	AfterAppContainerType PodInjectPolicyType = "AfterAppContainer"
)

// ShareVolumePolicy turns sharing the pod's volumes with a sidecar on or off.
type ShareVolumePolicy struct {
	// Type is enabled or disabled. Defaults to disabled.
	// +kubebuilder:default=disabled
	// +optional
	Type ShareVolumePolicyType `json:"type,omitempty"`
}

// ShareVolumePolicyType is enabled or disabled.
type ShareVolumePolicyType string

const (
	// ShareVolumePolicyEnabled shares the volumes.
	ShareVolumePolicyEnabled ShareVolumePolicyType = "enabled"
	// ShareVolumePolicyDisabled shares nothing (the default).
	ShareVolumePolicyDisabled ShareVolumePolicyType = "disabled"
)

// TransferEnvVar copies env vars from another container of the pod.
type TransferEnvVar struct {
	// SourceContainerName names the container to copy from.
	// +optional
	SourceContainerName string `json:"sourceContainerName,omitempty"`
	// SourceContainerNameFrom reads that name from a field of the pod.
	// +optional
	SourceContainerNameFrom *SourceContainerNameSource `json:"sourceContainerNameFrom,omitempty"`
	// EnvName is one env var to copy.
	// +optional
	EnvName string `json:"envName,omitempty"`
	// EnvNames are env vars to copy.
	// +optional
	EnvNames []string `json:"envNames,omitempty"`
}

// SourceContainerNameSource is where a pod says which container to copy from.
type SourceContainerNameSource struct {
	// FieldRef selects metadata.name, metadata.labels['<key>'] or
	// metadata.annotations['<key>'] of the pod.
	// +optional
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty"`
}

// ResourcesPolicy computes a sidecar's resources from those of the pod's
// containers when it is injected.
type ResourcesPolicy struct {
	// TargetContainersMode adds up (sum) the matched containers' resources
	// or takes the largest (max).
	// +kubebuilder:validation:Enum=sum;max
	TargetContainersMode TargetContainersModeType `json:"targetContainersMode"`

	// TargetContainersNameRegex matches the names of the containers to read
	// (the pod's own and its native sidecars, not injected ones). Defaults
	// to ".*".
	// +kubebuilder:default=".*"
	// +optional
	TargetContainersNameRegex string `json:"targetContainersNameRegex,omitempty"`

	// ResourcesExpr are the expressions giving the sidecar's resources.
	// +kubebuilder:validation:XValidation:rule="has(self.limits) || has(self.requests)",message="resourcesExpr needs limits or requests: without either it computes nothing"
	ResourcesExpr ResourcesExpr `json:"resourcesExpr"`
}

// TargetContainersModeType is how the matched containers' resources are combined.
type TargetContainersModeType string

const (
	// TargetContainersModeSum adds them up.
	TargetContainersModeSum TargetContainersModeType = "sum"
	// TargetContainersModeMax takes the largest.
	TargetContainersModeMax TargetContainersModeType = "max"
)

// ResourcesExpr are expressions (+, -, *, /, max(), min(), and the variable
// cpu or memory: the combined value of the matched containers) for a
// sidecar's limits and requests.
type ResourcesExpr struct {
	// +optional
	Limits *ResourceExprLimits `json:"limits,omitempty"`
	// +optional
	Requests *ResourceExprRequests `json:"requests,omitempty"`
}

// ResourceExprLimits give the limits. A matched container without a limit
// makes the variable unlimited, and an unlimited result sets no limit.
type ResourceExprLimits struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ResourceExprRequests give the requests. A matched container without a
// request counts as 0.
type ResourceExprRequests struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// SidecarContainerUpgradeType is how a sidecar is upgraded in place.
type SidecarContainerUpgradeType string

const (
	// SidecarContainerColdUpgrade restarts the container with its new image
	// (the default).
	SidecarContainerColdUpgrade SidecarContainerUpgradeType = "ColdUpgrade"
	// SidecarContainerHotUpgrade runs the container twice, and hands over
	// from the old one to the new one without a gap.
	SidecarContainerHotUpgrade SidecarContainerUpgradeType = "HotUpgrade"
)

// SidecarContainerUpgradeStrategy is how a sidecar is upgraded in place.
type SidecarContainerUpgradeStrategy struct {
	// UpgradeType is ColdUpgrade or HotUpgrade. Defaults to ColdUpgrade.
	// It cannot change (checked by the webhook).
	// +kubebuilder:default=ColdUpgrade
	// +optional
	UpgradeType SidecarContainerUpgradeType `json:"upgradeType,omitempty"`

	// HotUpgradeEmptyImage (HotUpgrade) is an image that behaves as the
	// sidecar's (command, probes) but does nothing, run by the idle one of
	// the two containers.
	// +optional
	HotUpgradeEmptyImage string `json:"hotUpgradeEmptyImage,omitempty"`
}
