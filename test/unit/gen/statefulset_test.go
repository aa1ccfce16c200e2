package gen

import (
	"testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestStatefulSetModifiers(t *testing.T) {
	base := StatefulSet("web", SetStatefulSetNamespace("ns"), SetStatefulSetUID("uid"), SetStatefulSetGeneration(2), SetStatefulSetReplicas(3),
		SetStatefulSetSelector(map[string]string{"app": "web"}),
		SetStatefulSetTemplate(PodTemplate(AddPodLabels(map[string]string{"app": "web"}), AddPodContainer(Container("main", SetContainerImage("app:1"))))),
		SetStatefulSetUpdateStrategy(appsv1beta1.StatefulSetUpdateStrategy{Type: "RollingUpdate"}), SetStatefulSetServiceName("svc"))
	if base.Name != "web" || base.Namespace != "ns" || base.UID != "uid" || base.Generation != 2 ||
		base.Spec.Selector.MatchLabels["app"] != "web" || base.Spec.Template.Labels["app"] != "web" ||
		base.Spec.UpdateStrategy.Type != "RollingUpdate" || *base.Spec.Replicas != 3 || base.Spec.ServiceName != "svc" {
		t.Errorf("modifiers not applied: %+v", base)
	}
	next := StatefulSetFrom(base, SetStatefulSetTemplate(PodTemplate(AddPodContainer(Container("main", SetContainerImage("app:2"))))))
	if base.Spec.Template.Spec.Containers[0].Image != "app:1" {
		t.Errorf("StatefulSetFrom changed its base: %+v", base.Spec.Template)
	}
	if next.Spec.Template.Spec.Containers[0].Image != "app:2" || next.UID != "uid" {
		t.Errorf("StatefulSetFrom did not copy and apply: %+v", next)
	}
}
