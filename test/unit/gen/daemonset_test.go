package gen

import (
	"testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestDaemonSetModifiers(t *testing.T) {
	base := DaemonSet("web", SetDaemonSetNamespace("ns"), SetDaemonSetUID("uid"), SetDaemonSetGeneration(2),
		SetDaemonSetSelector(map[string]string{"app": "web"}),
		SetDaemonSetTemplate(PodTemplate(AddPodLabels(map[string]string{"app": "web"}), AddPodContainer(Container("main", SetContainerImage("app:1"))))),
		SetDaemonSetUpdateStrategy(appsv1beta1.DaemonSetUpdateStrategy{Type: "RollingUpdate"}))
	if base.Name != "web" || base.Namespace != "ns" || base.UID != "uid" || base.Generation != 2 ||
		base.Spec.Selector.MatchLabels["app"] != "web" || base.Spec.Template.Labels["app"] != "web" ||
		base.Spec.UpdateStrategy.Type != "RollingUpdate" {
		t.Errorf("modifiers not applied: %+v", base)
	}
	next := DaemonSetFrom(base, SetDaemonSetTemplate(PodTemplate(AddPodContainer(Container("main", SetContainerImage("app:2"))))))
	if base.Spec.Template.Spec.Containers[0].Image != "app:1" {
		t.Errorf("DaemonSetFrom changed its base: %+v", base.Spec.Template)
	}
	if next.Spec.Template.Spec.Containers[0].Image != "app:2" || next.UID != "uid" {
		t.Errorf("DaemonSetFrom did not copy and apply: %+v", next)
	}
}
