package migrate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// hostPorts are the host ports the containers claim, as "port/protocol".
func hostPorts(containers []corev1.Container) []string {
	var ports []string
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				ports = append(ports, fmt.Sprintf("%d/%s", p.HostPort, p.Protocol))
			}
		}
	}
	return ports
}
