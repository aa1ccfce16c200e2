package gen

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestSidecarSetModifiers(t *testing.T) {
	base := SidecarSet("log", SetSidecarSetSelector(map[string]string{"app": "web"}),
		AddSidecarSetContainer(Container("agent", SetContainerImage("agent:1"))),
		AddSidecarSetInitContainer(Container("proxy", SetContainerImage("proxy:1"), SetContainerRestartPolicy(corev1.ContainerRestartPolicyAlways))))
	next := SidecarSetFrom(base, SetSidecarSetImage("proxy", "proxy:2"), SetSidecarSetPartition(intstr.FromInt32(2)))
	if base.Spec.InitContainers[0].Image != "proxy:1" || base.Spec.UpdateStrategy.Partition != nil {
		t.Errorf("SidecarSetFrom changed its base: %+v", base.Spec)
	}
	if next.Spec.InitContainers[0].Image != "proxy:2" || next.Spec.Containers[0].Image != "agent:1" || next.Spec.UpdateStrategy.Partition.IntValue() != 2 {
		t.Errorf("modifiers not applied: %+v", next.Spec)
	}
	pod := Pod("p", SetPodInitContainerStatus(corev1.ContainerStatus{Name: "proxy", ContainerID: "a"}),
		SetPodInitContainerStatus(corev1.ContainerStatus{Name: "proxy", ContainerID: "b"}))
	if len(pod.Status.InitContainerStatuses) != 1 || pod.Status.InitContainerStatuses[0].ContainerID != "b" {
		t.Errorf("SetPodInitContainerStatus did not replace by name: %+v", pod.Status.InitContainerStatuses)
	}
}
