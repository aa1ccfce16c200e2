package priorityinjection

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Reason says, in one word for metrics, why a pod was refused.
type Reason string

const (
	// ReasonBarrierSet: a container sets KRUISE_CONTAINER_BARRIER itself.
	ReasonBarrierSet Reason = "BarrierEnvSet"
	// ReasonInvalidPriority: a KRUISE_CONTAINER_PRIORITY value is not an
	// integer in range, or is not a literal.
	ReasonInvalidPriority Reason = "InvalidPriority"
	// ReasonInvalidAnnotation: apps.kruise.io/container-launch-priority is
	// set to something other than Ordered.
	ReasonInvalidAnnotation Reason = "InvalidAnnotation"
)

// Refusal is why a pod cannot be admitted: every problem found, each with
// the field it is about.
type Refusal struct {
	// Reason is the kind of the first problem.
	Reason Reason
	Errors field.ErrorList
}

// newRefusal lists the problems of the priorities (the annotation's first),
// then those of the barrier env vars; at least one list is not empty.
func newRefusal(priority, barrier field.ErrorList) *Refusal {
	r := &Refusal{Reason: ReasonBarrierSet, Errors: append(append(field.ErrorList{}, priority...), barrier...)}
	if len(priority) > 0 {
		r.Reason = ReasonInvalidPriority
		if strings.HasPrefix(priority[0].Field, "metadata.annotations") {
			r.Reason = ReasonInvalidAnnotation
		}
	}
	return r
}

// Error lists the problems.
func (r *Refusal) Error() string {
	return "container launch priority: " + r.Errors.ToAggregate().Error()
}

// Status is the refusal as the API server returns it to the client: 422
// Invalid, the problems as causes. name is the pod's name, or its
// generateName.
func (r *Refusal) Status(name string) metav1.Status {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, r.Errors).ErrStatus
}
