package inplace

import (
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Options says which changes, beyond images of regular containers and pod metadata, the caller
// is able to carry out in place.
type Options struct {
	// NativeSidecarImages accepts image changes of native sidecars (init containers with
	// restartPolicy Always): the kubelet restarts a running sidecar whose image changed.
	NativeSidecarImages bool
	// Resize accepts cpu and memory changes of regular containers, applied through the pod's
	// resize subresource, as long as every container keeps its resource names and the pod its
	// QoS class (the API server refuses a resize that changes either).
	Resize bool
	// noResize, with Resize off, says why: it is the Detail of the NotInPlaceError of a cpu or
	// memory change (WithoutResize).
	noResize string
}

// WithoutResize is o with resizing turned off for reason, the reason why pods cannot be resized
// (ResizeSupport.NoResize), which a cpu or memory change then reports as its NotInPlaceError's
// Detail. An empty reason leaves o as it is.
func (o Options) WithoutResize(reason string) Options {
	if reason == "" {
		return o
	}
	o.Resize, o.noResize = false, reason
	return o
}

// NotInPlaceError says why a template change cannot be applied in place: Field is the path of
// the first field that differs in a way the kubelet cannot apply to a running pod, written for
// an Event or a condition message ("spec.containers[app].env").
type NotInPlaceError struct {
	Field string
	// Detail, when set, says more than "changed".
	Detail string
}

func (e *NotInPlaceError) Error() string {
	if e.Detail == "" {
		return e.Field + " changed"
	}
	return e.Field + ": " + e.Detail
}

// IsNotInPlace reports whether err says that a change cannot be applied in place (as opposed
// to a caller's mistake).
func IsNotInPlace(err error) bool {
	var n *NotInPlaceError
	return errors.As(err, &n)
}

// Plan decides whether the pods of template old can be brought to template new in place, and
// returns what the update changes. Templates are compared field by field, never as encoded text,
// so a field's position or its nil-versus-empty form makes no difference. The error is a
// *NotInPlaceError when the change needs new pods. Equal templates give an empty Spec.
func Plan(old, new *corev1.PodTemplateSpec, opts Options) (*Spec, error) {
	if old == nil || new == nil {
		return nil, errors.New("planning an in-place update: both templates are required")
	}
	spec := newSpec()
	for _, f := range changedFields(&old.ObjectMeta, &new.ObjectMeta, "labels", "annotations") {
		return nil, &NotInPlaceError{Field: "metadata." + f}
	}
	for _, f := range changedFields(&old.Spec, &new.Spec) {
		var err error
		switch f {
		case "initContainers":
			err = planInitContainers(spec, old.Spec.InitContainers, new.Spec.InitContainers, opts)
		case "containers":
			err = planContainers(spec, old.Spec.Containers, new.Spec.Containers, opts)
		default:
			err = &NotInPlaceError{Field: "spec." + f}
		}
		if err != nil {
			return nil, err
		}
	}
	if len(spec.ContainerResources) > 0 {
		if oldQoS, newQoS := qosClass(&old.Spec), qosClass(&new.Spec); oldQoS != newQoS {
			return nil, &NotInPlaceError{Field: "spec.containers[*].resources",
				Detail: fmt.Sprintf("the QoS class would change from %s to %s", oldQoS, newQoS)}
		}
	}
	if err := planMetadata(spec, old, new); err != nil {
		return nil, err
	}
	return spec, nil
}

// planContainers records the image and resource changes of regular containers, and refuses
// any other change, including containers added, removed or reordered.
func planContainers(spec *Spec, old, new []corev1.Container, opts Options) error {
	if err := sameNames("spec.containers", old, new); err != nil {
		return err
	}
	for i := range old {
		o, n := &old[i], &new[i]
		path := fmt.Sprintf("spec.containers[%s]", o.Name)
		for _, f := range changedFields(o, n) {
			switch f {
			case "image":
				spec.ContainerImages[o.Name] = n.Image
			case "resources":
				if !opts.Resize {
					return &NotInPlaceError{Field: path + ".resources", Detail: opts.noResize}
				}
				if err := resizable(path+".resources", o.Resources, n.Resources); err != nil {
					return err
				}
				spec.ContainerResources[o.Name] = corev1.ResourceRequirements{
					Limits:   n.Resources.Limits.DeepCopy(),
					Requests: n.Resources.Requests.DeepCopy(),
				}
			default:
				return &NotInPlaceError{Field: path + "." + f}
			}
		}
	}
	return nil
}

// planInitContainers accepts only image changes of native sidecars, and only when asked to:
// a plain init container has run to completion and is never run again.
func planInitContainers(spec *Spec, old, new []corev1.Container, opts Options) error {
	if err := sameNames("spec.initContainers", old, new); err != nil {
		return err
	}
	for i := range old {
		o, n := &old[i], &new[i]
		path := fmt.Sprintf("spec.initContainers[%s]", o.Name)
		for _, f := range changedFields(o, n) {
			if f != "image" || !opts.NativeSidecarImages || !isNativeSidecar(o) {
				return &NotInPlaceError{Field: path + "." + f}
			}
			spec.ContainerImages[o.Name] = n.Image
		}
	}
	return nil
}

// sameNames refuses containers added, removed or reordered.
func sameNames(path string, old, new []corev1.Container) error {
	if len(old) != len(new) {
		return &NotInPlaceError{Field: path, Detail: fmt.Sprintf("%d containers instead of %d", len(new), len(old))}
	}
	for i := range old {
		if old[i].Name != new[i].Name {
			return &NotInPlaceError{Field: path, Detail: fmt.Sprintf("container %q in place of %q", new[i].Name, old[i].Name)}
		}
	}
	return nil
}

// resizable accepts a change of cpu and memory values only: the same resource names on both
// sides (adding or removing a request or limit changes what the kubelet enforces in ways a
// resize does not), and no change of resource claims.
func resizable(path string, old, new corev1.ResourceRequirements) error {
	if !equality.Semantic.DeepEqual(old.Claims, new.Claims) {
		return &NotInPlaceError{Field: path + ".claims"}
	}
	for _, side := range []struct {
		name     string
		old, new corev1.ResourceList
	}{{"limits", old.Limits, new.Limits}, {"requests", old.Requests, new.Requests}} {
		if len(side.old) != len(side.new) {
			return &NotInPlaceError{Field: path + "." + side.name, Detail: "resource names added or removed"}
		}
		for _, name := range sortedResourceNames(side.new) {
			was, ok := side.old[name]
			if !ok {
				return &NotInPlaceError{Field: path + "." + side.name, Detail: "resource names added or removed"}
			}
			q := side.new[name]
			if was.Cmp(q) == 0 {
				continue
			}
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				return &NotInPlaceError{Field: fmt.Sprintf("%s.%s[%s]", path, side.name, name), Detail: "only cpu and memory can be resized"}
			}
		}
	}
	return nil
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func isNativeSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
