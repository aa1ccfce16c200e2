package sidecarset

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// In-place resize of sidecars (a kruise addition: OpenKruise's SidecarSet upgrades images only,
// and leaves a pod whose sidecars changed in anything else). A pod whose sidecars differ from the
// SidecarSet in images and in the cpu and memory values of their requests and limits is
// upgradable too: the resources go through the pod's resize subresource, as a CloneSet's do, and
// the images with the upgrade's patch. What differs is read from the ControllerRevision the pod
// records (its hash annotation's controllerRevision) against the SidecarSet as it is now, so
// only what the SidecarSet changed is compared, never what injection added (transferred env,
// shared volume mounts). The rest of the upgrade (strategy, partition, maxUnavailable, budget)
// is the image upgrade's.

// resizer decides sidecar resizes for one SidecarSet in one pass.
type resizer struct {
	// noResize is why pods cannot be resized now ("" when they can: inplace.ResizeSupport).
	noResize string
	// older reads the SidecarSet at a ControllerRevision of its history by name.
	older func(name string) (*appsv1beta1.SidecarSet, error)
}

// resizerFor is the pass's resizer for ss, whose history is revs.
func (c *Controller) resizerFor(ctx context.Context, ss *appsv1beta1.SidecarSet, revs *revision.Revisions) *resizer {
	byName := map[string]*appsv1.ControllerRevision{}
	for _, rev := range revs.All {
		byName[rev.Name] = rev
	}
	decoded := map[string]*appsv1beta1.SidecarSet{}
	return &resizer{
		noResize: c.resize.NoResize(ctx),
		older: func(name string) (*appsv1beta1.SidecarSet, error) {
			if old, ok := decoded[name]; ok {
				return old, nil
			}
			rev, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("ControllerRevision %s of SidecarSet %s is not in its history", name, ss.Name)
			}
			old, err := sidecarrules.AtRevision(ss, rev.Data.Raw)
			if err != nil {
				return nil, err
			}
			decoded[name] = old
			return old, nil
		},
	}
}

// errNoRevision: the pod records no revision to compare with (an injection by an old release).
var errNoRevision = errors.New("the pod records no ControllerRevision of the SidecarSet")

// plan says what resizing, on top of new images, brings pod from the SidecarSet at the revision
// it records (rev) to ss: container name → new requests and limits, and the in-place spec of
// those resizes (for the budget's operation). An error says why that is not possible: the
// SidecarSet changed more than images and cpu or memory values, or pods cannot be resized.
func (r *resizer) plan(ss *appsv1beta1.SidecarSet, pod *corev1.Pod, rev string) (*inplace.Spec, error) {
	if r == nil || r.older == nil {
		return nil, errors.New("no resize")
	}
	if rev == "" {
		return nil, errNoRevision
	}
	old, err := r.older(rev)
	if err != nil {
		return nil, err
	}
	changed, err := resourcesOnlyChange(old, ss)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return nil, errors.New("the sidecars changed in more than images")
	}
	from := &corev1.PodTemplateSpec{Spec: *pod.Spec.DeepCopy()}
	to := from.DeepCopy()
	for name, res := range changed {
		c := findContainer(to.Spec.Containers, name)
		if c == nil {
			return nil, fmt.Errorf("pod %s/%s has no container %s of SidecarSet %s to resize", pod.Namespace, pod.Name, name, ss.Name)
		}
		c.Resources.Requests, c.Resources.Limits = res.Requests.DeepCopy(), res.Limits.DeepCopy()
	}
	// The engine's plan holds the rules the API server holds a resize to (same resource names,
	// same QoS class, cpu and memory only) and knows whether pods can be resized now.
	spec, err := inplace.Plan(from, to, inplace.Options{Resize: true}.WithoutResize(r.noResize))
	if err != nil {
		return nil, err
	}
	return spec, nil
}

// resourcesOnlyChange compares two versions of a SidecarSet's injected containers: when they
// differ in images and in resources of regular, non-HotUpgrade containers only, it returns the
// new resources of the containers whose resources changed; any other difference is an error.
func resourcesOnlyChange(old, cur *appsv1beta1.SidecarSet) (map[string]corev1.ResourceRequirements, error) {
	if len(old.Spec.Containers) != len(cur.Spec.Containers) {
		return nil, errors.New("sidecar containers added or removed")
	}
	changed := map[string]corev1.ResourceRequirements{}
	oldBare, curBare := old.DeepCopy(), cur.DeepCopy()
	for i := range cur.Spec.Containers {
		o, n := &old.Spec.Containers[i], &cur.Spec.Containers[i]
		if o.Name != n.Name {
			return nil, fmt.Errorf("sidecar container %s in place of %s", n.Name, o.Name)
		}
		if equality.Semantic.DeepEqual(o.Resources, n.Resources) {
			continue
		}
		if sidecarrules.IsHotUpgrade(n) {
			return nil, fmt.Errorf("the resources of HotUpgrade sidecar %s changed", n.Name)
		}
		changed[n.Name] = n.Resources
		oldBare.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
		curBare.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
	}
	// Resources set aside, the SidecarSets must be the same but for images.
	a, err := sidecarrules.HashWithoutImage(oldBare)
	if err != nil {
		return nil, err
	}
	b, err := sidecarrules.HashWithoutImage(curBare)
	if err != nil {
		return nil, err
	}
	if a != b {
		return nil, errors.New("the sidecars changed in more than images and cpu and memory")
	}
	return changed, nil
}
