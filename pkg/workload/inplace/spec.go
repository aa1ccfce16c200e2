package inplace

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Spec is what an in-place update changes on a pod. Containers are named; a name may be a
// regular container or a native sidecar (names are unique across both lists of a pod).
type Spec struct {
	// ContainerImages: container name → the new image.
	ContainerImages map[string]string
	// ContainerResources: container name → the container's new cpu and memory requests and
	// limits, applied through the pod's resize subresource.
	ContainerResources map[string]corev1.ResourceRequirements
	// ContainerRefMetadata: container name → the changed labels and annotations (new values) the
	// container reads as env through the downward API. They are written with the container's
	// batch, and the container must be restarted to see them.
	ContainerRefMetadata map[string]metav1.ObjectMeta
	// Metadata is the rest of the pod metadata change, read by no container's env; it is written
	// with the first batch.
	Metadata MetadataPatch
}

// MetadataPatch sets and removes pod labels and annotations.
type MetadataPatch struct {
	Labels             map[string]string
	Annotations        map[string]string
	RemovedLabels      []string
	RemovedAnnotations []string
}

func newSpec() *Spec {
	return &Spec{
		ContainerImages:      map[string]string{},
		ContainerResources:   map[string]corev1.ResourceRequirements{},
		ContainerRefMetadata: map[string]metav1.ObjectMeta{},
	}
}

// Empty reports whether the update changes nothing on the pod but its revision.
func (s *Spec) Empty() bool {
	return len(s.ContainerImages) == 0 && len(s.ContainerResources) == 0 &&
		len(s.ContainerRefMetadata) == 0 && s.Metadata.Empty()
}

// UpdateEnvFromMetadata reports whether some container must restart to read changed metadata.
func (s *Spec) UpdateEnvFromMetadata() bool { return len(s.ContainerRefMetadata) > 0 }

// Containers are the names of the containers the update touches, sorted.
func (s *Spec) Containers() []string {
	seen := map[string]bool{}
	for n := range s.ContainerImages {
		seen[n] = true
	}
	for n := range s.ContainerResources {
		seen[n] = true
	}
	for n := range s.ContainerRefMetadata {
		seen[n] = true
	}
	return sortedKeys(seen)
}

// RestartsContainers reports whether applying the update to pod restarts a container: a new
// image, env read from changed metadata, or a resize of a resource whose resizePolicy is
// RestartContainer. A pod whose containers keep running need not leave its Services.
func (s *Spec) RestartsContainers(pod *corev1.Pod) bool {
	if len(s.ContainerImages) > 0 || len(s.ContainerRefMetadata) > 0 {
		return true
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		want, ok := s.ContainerResources[c.Name]
		if !ok {
			continue
		}
		for _, p := range c.ResizePolicy {
			if p.RestartPolicy == corev1.RestartContainer && resourceChanges(c.Resources, want, p.ResourceName) {
				return true
			}
		}
	}
	return false
}

// resourceChanges reports whether the request or limit of name differs between have and want.
func resourceChanges(have, want corev1.ResourceRequirements, name corev1.ResourceName) bool {
	differs := func(a, b corev1.ResourceList) bool {
		qa, oka := a[name]
		qb, okb := b[name]
		return oka != okb || qa.Cmp(qb) != 0
	}
	return differs(have.Requests, want.Requests) || differs(have.Limits, want.Limits)
}

// Empty reports whether the patch changes nothing.
func (m MetadataPatch) Empty() bool {
	return len(m.Labels) == 0 && len(m.Annotations) == 0 && len(m.RemovedLabels) == 0 && len(m.RemovedAnnotations) == 0
}

// applyTo writes the patch into meta.
func (m MetadataPatch) applyTo(meta *metav1.ObjectMeta) {
	meta.Labels = setAndRemove(meta.Labels, m.Labels, m.RemovedLabels)
	meta.Annotations = setAndRemove(meta.Annotations, m.Annotations, m.RemovedAnnotations)
}

func setAndRemove(into, set map[string]string, remove []string) map[string]string {
	if len(set) > 0 && into == nil {
		into = map[string]string{}
	}
	for k, v := range set {
		into[k] = v
	}
	for _, k := range remove {
		delete(into, k)
	}
	return into
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
