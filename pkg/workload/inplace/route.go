package inplace

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// UpdatePolicy is how a workload moves a pod to a new revision (a CloneSet's or an Advanced
// StatefulSet's podUpdatePolicy: ReCreate, InPlaceIfPossible, InPlaceOnly).
type UpdatePolicy int

const (
	// PolicyReCreate deletes the pod and creates a new one.
	PolicyReCreate UpdatePolicy = iota
	// PolicyInPlaceIfPossible updates in place what can be, and recreates the rest.
	PolicyInPlaceIfPossible
	// PolicyInPlaceOnly updates in place, and refuses a change that cannot be.
	PolicyInPlaceOnly
)

// Route is how one pod reaches the update revision.
type Route struct {
	// InPlace is the in-place update to apply, when the pod is updated in place.
	InPlace *Spec
	// Recreate: the pod is deleted and replaced.
	Recreate bool
	// Refused says why the pod can reach the update revision neither way (InPlaceOnly and a
	// change that needs a new pod); the workload reports it and leaves the pod.
	Refused error
}

// RouteUpdate decides how a pod created from template from reaches template to. from is nil when
// the pod's revision is no longer known (its ControllerRevision is gone).
func RouteUpdate(policy UpdatePolicy, from, to *corev1.PodTemplateSpec, opts Options) Route {
	if policy == PolicyReCreate {
		return Route{Recreate: true}
	}
	var err error
	if from == nil {
		err = fmt.Errorf("the pod's revision is no longer in the workload's history, so the change cannot be computed")
	} else {
		var spec *Spec
		if spec, err = Plan(from, to, opts); err == nil {
			return Route{InPlace: spec}
		}
		if !IsNotInPlace(err) {
			return Route{Refused: fmt.Errorf("comparing the pod's revision with the update revision: %w", err)}
		}
	}
	if policy == PolicyInPlaceOnly {
		return Route{Refused: fmt.Errorf("update strategy is InPlaceOnly but the change cannot be applied in place: %w", err)}
	}
	return Route{Recreate: true}
}
