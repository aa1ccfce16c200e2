package sidecarrules

import "fmt"

// RefusalReason names why Inject refused a pod; the webhook reports it as its metric reason.
type RefusalReason string

const (
	// ReasonContainerConflict: two SidecarSets inject a container (or init container) of the same name.
	ReasonContainerConflict RefusalReason = "SidecarContainerConflict"
	// ReasonVolumeConflict: two SidecarSets inject volumes of the same name and different content.
	ReasonVolumeConflict RefusalReason = "SidecarVolumeConflict"
	// ReasonAnnotationConflict: two SidecarSets overwrite the same pod annotation.
	ReasonAnnotationConflict RefusalReason = "SidecarAnnotationConflict"
	// ReasonInvalidPatch: a MergePatchJson patchPodMetadata does not apply to the pod's annotation.
	ReasonInvalidPatch RefusalReason = "InvalidPatchPodMetadata"
	// ReasonInvalidAnnotation: the pod carries a SidecarSet annotation that does not parse.
	ReasonInvalidAnnotation RefusalReason = "InvalidSidecarSetAnnotation"
	// ReasonRevisionNotFound: injectionStrategy.revision names a ControllerRevision that is not there.
	ReasonRevisionNotFound RefusalReason = "SidecarSetRevisionNotFound"
	// ReasonResourcesPolicy: a sidecar's resourcesPolicy cannot be computed for the pod (no
	// target container, an expression that fails, a request above the limit).
	ReasonResourcesPolicy RefusalReason = "SidecarResourcesPolicyFailed"
)

// Refusal is why a pod cannot be admitted with its sidecars: the message names the SidecarSets
// involved, so that whoever reads the pod's creation error knows which objects to fix.
type Refusal struct {
	Reason  RefusalReason
	Message string
}

func (r *Refusal) Error() string { return r.Message }

func refuse(reason RefusalReason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}
