package gen

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
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
	hot := SidecarSetFrom(base, SetSidecarSetGeneration(3), SetSidecarSetResourceVersion("rv-2"),
		SetSidecarSetUpgradeStrategy("agent", appsv1beta1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1beta1.SidecarContainerHotUpgrade}))
	if hot.Generation != 3 || hot.ResourceVersion != "rv-2" || hot.Spec.Containers[0].UpgradeStrategy.UpgradeType != appsv1beta1.SidecarContainerHotUpgrade {
		t.Errorf("metadata or upgrade strategy not set: %+v", hot)
	}
	pod := Pod("p", SetPodInitContainerStatus(corev1.ContainerStatus{Name: "proxy", ContainerID: "a"}),
		SetPodInitContainerStatus(corev1.ContainerStatus{Name: "proxy", ContainerID: "b"}))
	if len(pod.Status.InitContainerStatuses) != 1 || pod.Status.InitContainerStatuses[0].ContainerID != "b" {
		t.Errorf("SetPodInitContainerStatus did not replace by name: %+v", pod.Status.InitContainerStatuses)
	}
}
