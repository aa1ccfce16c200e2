package sidecarrules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// appMount is an app container's volumeMount that a sidecar with shareVolumePolicy enabled gets,
// with the env variables its subPathExpr expands (the sidecar needs them to resolve the same path).
type appMount struct {
	mount corev1.VolumeMount
	env   []corev1.EnvVar
}

// subPathVar matches a $(VAR) reference in a subPathExpr.
var subPathVar = regexp.MustCompile(`\$\(([^)]+)\)`)

// isApp says whether c is one of the pod's own containers, not one a SidecarSet injected.
func isApp(c corev1.Container) bool {
	return !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == InjectedEnv && e.Value == "true" })
}

// sharedMounts lists the app containers' volumeMounts, once per mount path (the first wins).
func sharedMounts(pod *corev1.Pod) []appMount {
	var out []appMount
	seen := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		if !isApp(c) {
			continue
		}
		for _, m := range c.VolumeMounts {
			if seen[m.MountPath] {
				continue
			}
			seen[m.MountPath] = true
			am := appMount{mount: m}
			for _, ref := range subPathVar.FindAllStringSubmatch(m.SubPathExpr, -1) {
				if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == ref[1] }); i >= 0 {
					am.env = append(am.env, c.Env[i])
				}
			}
			out = append(out, am)
		}
	}
	return out
}

// mergeMounts adds to c's mounts those of add at a path c neither mounts nor attaches a device at.
func mergeMounts(c corev1.Container, add []corev1.VolumeMount) []corev1.VolumeMount {
	taken := usedPaths(c)
	out := c.VolumeMounts
	for _, m := range add {
		if !taken[m.MountPath] {
			out = append(out, m)
			taken[m.MountPath] = true
		}
	}
	return out
}

// usedPaths are the paths c mounts a volume or attaches a device at.
func usedPaths(c corev1.Container) map[string]bool {
	taken := map[string]bool{}
	for _, m := range c.VolumeMounts {
		taken[m.MountPath] = true
	}
	for _, d := range c.VolumeDevices {
		taken[d.DevicePath] = true
	}
	return taken
}

// appDevices lists the app containers' volumeDevices.
func appDevices(pod *corev1.Pod) []corev1.VolumeDevice {
	var out []corev1.VolumeDevice
	for _, c := range pod.Spec.Containers {
		if isApp(c) {
			out = append(out, c.VolumeDevices...)
		}
	}
	return out
}

// mergeDevices adds to c's devices those of add at a path c does not use yet.
func mergeDevices(c corev1.Container, add []corev1.VolumeDevice) []corev1.VolumeDevice {
	taken := usedPaths(c)
	out := c.VolumeDevices
	for _, d := range add {
		if !taken[d.DevicePath] {
			out = append(out, d)
			taken[d.DevicePath] = true
		}
	}
	return out
}

// transferredEnv copies, per transferEnv entry of sc, the named env variables of the source
// container (sourceContainerName, or the pod label or annotation sourceContainerNameFrom
// names). A variable or container that is not there is skipped, as OpenKruise does: the sidecar
// starts without it rather than the pod being refused.
func transferredEnv(sc *appsv1beta1.SidecarContainer, pod *corev1.Pod) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, t := range sc.TransferEnv {
		source := t.SourceContainerName
		if t.SourceContainerNameFrom != nil && t.SourceContainerNameFrom.FieldRef != nil {
			name, err := containerNameFrom(t.SourceContainerNameFrom.FieldRef.FieldPath, pod)
			if err != nil {
				continue
			}
			source = name
		}
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == source })
		if i < 0 {
			continue
		}
		names := slices.Clone(t.EnvNames)
		if t.EnvName != "" {
			names = append(names, t.EnvName)
		}
		slices.Sort(names)
		for _, name := range slices.Compact(names) {
			env := pod.Spec.Containers[i].Env
			if j := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name }); j >= 0 {
				out = append(out, env[j])
			}
		}
	}
	return out
}

// containerNameFrom reads metadata.labels['k'] or metadata.annotations['k'] of pod: the only
// field paths sourceContainerNameFrom supports.
func containerNameFrom(fieldPath string, pod *corev1.Pod) (string, error) {
	for prefix, values := range map[string]map[string]string{
		"metadata.labels[":      pod.Labels,
		"metadata.annotations[": pod.Annotations,
	} {
		rest, ok := strings.CutPrefix(fieldPath, prefix)
		if !ok {
			continue
		}
		key, ok := strings.CutSuffix(rest, "]")
		if !ok || len(key) < 2 || key[0] != '\'' || key[len(key)-1] != '\'' {
			break
		}
		return values[key[1:len(key)-1]], nil
	}
	return "", fmt.Errorf("sourceContainerNameFrom.fieldRef %q: only metadata.labels['...'] and metadata.annotations['...'] are supported", fieldPath)
}
