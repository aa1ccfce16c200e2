package gen

import (
	corev1 "k8s.io/api/core/v1"
)

// ContainerModifier changes a Container.
type ContainerModifier func(*corev1.Container)

// Container is a container named name, changed by mods in order. It is a value, as pod specs
// hold containers: pass it to SetPodContainers or AddPodContainer.
func Container(name string, mods ...ContainerModifier) corev1.Container {
	return *apply(&corev1.Container{Name: name}, mods)
}

func SetContainerImage(image string) ContainerModifier {
	return func(c *corev1.Container) { c.Image = image }
}

// AddContainerEnv appends env vars to the container's.
func AddContainerEnv(env ...corev1.EnvVar) ContainerModifier {
	return func(c *corev1.Container) { c.Env = append(c.Env, env...) }
}

// AddContainerEnvFromField appends an env var read from the pod field fieldPath through the
// downward API (metadata.labels['k'], metadata.annotations['k'], ...).
func AddContainerEnvFromField(name, fieldPath string) ContainerModifier {
	return AddContainerEnv(corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath},
	}})
}

// SetContainerResources sets the container's requests and limits (nil leaves one unset).
func SetContainerResources(requests, limits corev1.ResourceList) ContainerModifier {
	return func(c *corev1.Container) {
		c.Resources.Requests = requests
		c.Resources.Limits = limits
	}
}

// AddContainerResizePolicy says what the kubelet does when resource name is resized.
func AddContainerResizePolicy(name corev1.ResourceName, policy corev1.ResourceResizeRestartPolicy) ContainerModifier {
	return func(c *corev1.Container) {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: name, RestartPolicy: policy})
	}
}

// SetContainerRestartPolicy sets the container's own restart policy; Always on an init
// container makes it a native sidecar.
func SetContainerRestartPolicy(policy corev1.ContainerRestartPolicy) ContainerModifier {
	return func(c *corev1.Container) { c.RestartPolicy = &policy }
}

// AddContainerPort appends a TCP port named name (no name: "") to the container's.
func AddContainerPort(name string, port int32) ContainerModifier {
	return func(c *corev1.Container) {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	}
}
