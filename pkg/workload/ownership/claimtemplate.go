package ownership

import corev1 "k8s.io/api/core/v1"

// ClaimFromTemplate is a new PVC called name in namespace made from the volume claim template t
// of a workload whose pods each get their own PVCs (CloneSet, Advanced StatefulSet): the
// template's labels and the workload's matchLabels, none of the template's identity or status,
// and no owner (the workload sets the one it wants).
func ClaimFromTemplate(t *corev1.PersistentVolumeClaim, name, namespace string, matchLabels map[string]string) *corev1.PersistentVolumeClaim {
	c := t.DeepCopy()
	c.Name = name
	c.Namespace = namespace
	c.Labels = make(map[string]string, len(t.Labels)+len(matchLabels))
	for k, v := range t.Labels {
		c.Labels[k] = v
	}
	for k, v := range matchLabels {
		c.Labels[k] = v
	}
	c.OwnerReferences = nil
	c.ResourceVersion, c.UID = "", ""
	c.Status = corev1.PersistentVolumeClaimStatus{}
	return c
}

// MountClaims points the pod's volumes named after claim templates at the pod's own PVCs
// (claimName of each template's name), adding those the pod template does not declare.
func MountClaims(spec *corev1.PodSpec, templates []corev1.PersistentVolumeClaim, claimName func(template string) string) {
	for _, vct := range templates {
		src := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(vct.Name)}}
		found := false
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == vct.Name {
				spec.Volumes[i].VolumeSource = src
				found = true
			}
		}
		if !found {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: src})
		}
	}
}
