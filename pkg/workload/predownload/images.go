package predownload

import corev1 "k8s.io/api/core/v1"

// ContainerImage is a container's new image.
type ContainerImage struct{ Container, Image string }

// ChangedImages lists, in to's order, the containers (and native sidecars, which are updated in
// place too) whose image in to differs from theirs in any of from (the templates the pods still
// to be updated run). A container that none of from has is left out: it is new, so the update
// is not in place. The reference makes a job per container even when two name the same image;
// one job per image is enough, named after the first container that has it.
func ChangedImages(to *corev1.PodTemplateSpec, from ...*corev1.PodTemplateSpec) []ContainerImage {
	if to == nil {
		return nil
	}
	old := map[string]map[string]bool{} // container name -> images it has in from
	note := func(c corev1.Container) {
		if old[c.Name] == nil {
			old[c.Name] = map[string]bool{}
		}
		old[c.Name][c.Image] = true
	}
	for _, t := range from {
		if t == nil {
			continue
		}
		for _, c := range t.Spec.InitContainers {
			note(c)
		}
		for _, c := range t.Spec.Containers {
			note(c)
		}
	}
	var out []ContainerImage
	seen := map[string]bool{}
	add := func(c corev1.Container) {
		images, ok := old[c.Name]
		if !ok || seen[c.Image] || (len(images) == 1 && images[c.Image]) {
			return
		}
		seen[c.Image] = true
		out = append(out, ContainerImage{Container: c.Name, Image: c.Image})
	}
	for _, c := range to.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for _, c := range to.Spec.Containers {
		add(c)
	}
	return out
}
