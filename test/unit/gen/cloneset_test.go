package gen

import (
	"testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestCloneSetModifiers(t *testing.T) {
	base := CloneSet("web", SetCloneSetNamespace("ns"), SetCloneSetUID("uid"), SetCloneSetGeneration(2), SetCloneSetReplicas(3),
		SetCloneSetSelector(map[string]string{"app": "web"}),
		SetCloneSetTemplate(PodTemplate(AddPodLabels(map[string]string{"app": "web"}), AddPodContainer(Container("main", SetContainerImage("app:1"))))),
		SetCloneSetUpdateStrategy(appsv1beta1.CloneSetUpdateStrategy{Type: "RollingUpdate"}))
	if base.Name != "web" || base.Namespace != "ns" || base.UID != "uid" || base.Generation != 2 ||
		base.Spec.Selector.MatchLabels["app"] != "web" || base.Spec.Template.Labels["app"] != "web" ||
		base.Spec.UpdateStrategy.Type != "RollingUpdate" || *base.Spec.Replicas != 3 {
		t.Errorf("modifiers not applied: %+v", base)
	}
	next := CloneSetFrom(base, SetCloneSetTemplate(PodTemplate(AddPodContainer(Container("main", SetContainerImage("app:2"))))))
	if base.Spec.Template.Spec.Containers[0].Image != "app:1" {
		t.Errorf("CloneSetFrom changed its base: %+v", base.Spec.Template)
	}
	if next.Spec.Template.Spec.Containers[0].Image != "app:2" || next.UID != "uid" {
		t.Errorf("CloneSetFrom did not copy and apply: %+v", next)
	}
}
