package pub

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod annotations of an in-place update. The old keys, without the domain, are those of OpenKruise
// before v0.9; they are read, never written.
const (
	// InPlaceUpdateStateKey holds the JSON InPlaceUpdateState of the pod's last in-place update.
	InPlaceUpdateStateKey    = "apps.kruise.io/inplace-update-state"
	InPlaceUpdateStateKeyOld = "inplace-update-state"
	// InPlaceUpdateGraceKey holds, while an update waits out inPlaceUpdateStrategy.gracePeriodSeconds
	// with the pod not ready, what is applied once the period has passed.
	InPlaceUpdateGraceKey    = "apps.kruise.io/inplace-update-grace"
	InPlaceUpdateGraceKeyOld = "inplace-update-grace"
	// RuntimeContainerMetaKey holds the JSON RuntimeContainerMetaSet kruise-daemon reports for the
	// pod's containers, read from the container runtime.
	RuntimeContainerMetaKey = "apps.kruise.io/runtime-containers-meta"
	// RestartedAtAnnotationKey is the pod template annotation `kubectl rollout restart` (and
	// `kubectl kruise rollout restart`) stamps. A change of it restarts every regular container
	// of an in-place updated pod, as if each read it as env (package inplace).
	RestartedAtAnnotationKey = "kubectl.kubernetes.io/restartedAt"
)

// InPlaceUpdateState records an in-place update of a pod: what was asked, what is still to come
// in later container batches, and what the containers ran before, to tell when they have changed.
type InPlaceUpdateState struct {
	// Revision is the workload revision the pod is being updated to.
	Revision string `json:"revision"`
	// UpdateTimestamp is when the update started.
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// LastContainerStatuses: per container updated, the image ID it ran before.
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses"`
	// UpdateEnvFromMetadata: the update changes labels or annotations that containers read as env.
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata,omitempty"`
	// UpdateResources: the update resizes containers.
	UpdateResources bool `json:"updateResources,omitempty"`
	// UpdateImages: the update changes container images.
	UpdateImages bool `json:"updateImages,omitempty"`
	// NextContainerImages: images of later batches, applied once the current batch is ready.
	NextContainerImages map[string]string `json:"nextContainerImages,omitempty"`
	// NextContainerRefMetadata: labels and annotations that containers of later batches read as
	// env, applied with their batch.
	NextContainerRefMetadata map[string]metav1.ObjectMeta `json:"nextContainerRefMetadata,omitempty"`
	// NextContainerResources: resources of later batches.
	NextContainerResources map[string]corev1.ResourceRequirements `json:"nextContainerResources,omitempty"`
	// PreCheckBeforeNext: what must hold before the next batch starts.
	PreCheckBeforeNext *InPlaceUpdatePreCheckBeforeNext `json:"preCheckBeforeNext,omitempty"`
	// ContainerBatchesRecord: the batches applied so far, in order.
	ContainerBatchesRecord []InPlaceUpdateContainerBatch `json:"containerBatchesRecord,omitempty"`
}

// InPlaceUpdatePreCheckBeforeNext is what must hold before the next batch of an update starts.
type InPlaceUpdatePreCheckBeforeNext struct {
	// ContainersRequiredReady must all be ready.
	ContainersRequiredReady []string `json:"containersRequiredReady,omitempty"`
}

// InPlaceUpdateContainerBatch is one batch of containers updated together.
type InPlaceUpdateContainerBatch struct {
	Timestamp  metav1.Time `json:"timestamp"`
	Containers []string    `json:"containers"`
}

// InPlaceUpdateContainerStatus is what a container ran before an in-place update.
type InPlaceUpdateContainerStatus struct {
	ImageID string `json:"imageID,omitempty"`
	// ContainerID of the container before the update (kruise's addition; OpenKruise ignores it):
	// a new ID proves the runtime started a new container even when the image ID is unchanged,
	// as for a retagged image or an env-from-metadata restart.
	ContainerID string `json:"containerID,omitempty"`
	// Restart (kruise's addition; OpenKruise ignores it): the update restarts this container
	// without changing its image (a restart asked by RestartedAtAnnotationKey), so kruise-daemon
	// stops ContainerID for the kubelet to start a new one.
	Restart bool `json:"restart,omitempty"`
}

// InPlaceUpdateStrategy tunes in-place updates.
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is how long a pod stays not ready before its containers are updated, so
	// that endpoints drop it first.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`
	// ImagePreDownloadParallelism: how many nodes pull the new images at once ahead of the update
	// (v1beta1 CloneSet; the annotation apps.kruise.io/image-predownload-parallelism in v1alpha1).
	// +optional
	ImagePreDownloadParallelism *intstr.IntOrString `json:"imagePreDownloadParallelism,omitempty"`
	// ImagePreDownloadTimeoutSeconds bounds each pre-download pull.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ImagePreDownloadTimeoutSeconds *int32 `json:"imagePreDownloadTimeoutSeconds,omitempty"`
	// ImagePreDownloadMinUpdatedReadyPods: pre-download starts once this many updated pods are ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ImagePreDownloadMinUpdatedReadyPods *int32 `json:"imagePreDownloadMinUpdatedReadyPods,omitempty"`
}

// RuntimeContainerMetaSet is what kruise-daemon reports of a pod's containers.
type RuntimeContainerMetaSet struct {
	Containers []RuntimeContainerMeta `json:"containers"`
}

// RuntimeContainerMeta is one container as the runtime runs it.
type RuntimeContainerMeta struct {
	Name         string                 `json:"name"`
	ContainerID  string                 `json:"containerID"`
	RestartCount int32                  `json:"restartCount"`
	Hashes       RuntimeContainerHashes `json:"hashes"`
}

// RuntimeContainerHashes fingerprint a running container's spec.
type RuntimeContainerHashes struct {
	// PlainHash is the kubelet's hash of the container spec the container was started from.
	PlainHash uint64 `json:"plainHash"`
	// ExtractedEnvFromMetadataHash fingerprints the env the container was started with that comes
	// from the pod's labels and annotations.
	ExtractedEnvFromMetadataHash uint64 `json:"extractedEnvFromMetadataHash,omitempty"`
}
