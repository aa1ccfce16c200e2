package uniteddeployment

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

const ns = "default"

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"nvme"}}}},
				}}}},
			Tolerations: []corev1.Toleration{{Key: "base", Operator: corev1.TolerationOpExists}},
		},
	}
}

// zone is a subset in zone z, with a toleration of its own.
func zone(z string) appsv1alpha1.Subset {
	return appsv1alpha1.Subset{Name: z,
		NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}},
		Tolerations: []corev1.Toleration{{Key: "zone-" + z, Operator: corev1.TolerationOpExists}},
	}
}

// newUD is UnitedDeployment web of kind k over zones a, b and c with total replicas.
func newUD(k kind, total int32) *appsv1alpha1.UnitedDeployment {
	ud := &appsv1alpha1.UnitedDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "UnitedDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-web", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To(total),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Topology: appsv1alpha1.Topology{Subsets: []appsv1alpha1.Subset{zone("a"), zone("b"), zone("c")}},
		},
	}
	meta := metav1.ObjectMeta{Labels: map[string]string{"app": "web", "team": "x"}, Annotations: map[string]string{"note": "n"}}
	switch k {
	case kindCloneSet:
		ud.Spec.Template.CloneSetTemplate = &appsv1alpha1.CloneSetTemplateSpec{ObjectMeta: meta,
			Spec: appsv1alpha1.CloneSetSpec{Selector: ud.Spec.Selector, Template: podTemplate()}}
	case kindAdvancedStatefulSet:
		ud.Spec.Template.AdvancedStatefulSetTemplate = &appsv1alpha1.AdvancedStatefulSetTemplateSpec{ObjectMeta: meta,
			Spec: appsv1beta1.StatefulSetSpec{Selector: ud.Spec.Selector, Template: podTemplate()}}
	case kindStatefulSet:
		ud.Spec.Template.StatefulSetTemplate = &appsv1alpha1.StatefulSetTemplateSpec{ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Selector: ud.Spec.Selector, Template: podTemplate()}}
	case kindDeployment:
		ud.Spec.Template.DeploymentTemplate = &appsv1alpha1.DeploymentTemplateSpec{ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Selector: ud.Spec.Selector, Template: podTemplate()}}
	}
	return ud
}

func raw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

// podOf renders the pod template of a workload.
func podOf(w workload) corev1.PodTemplateSpec {
	switch o := w.(type) {
	case *appsv1beta1.CloneSet:
		return o.Spec.Template
	case *appsv1beta1.StatefulSet:
		return o.Spec.Template
	case *appsv1.StatefulSet:
		return o.Spec.Template
	case *appsv1.Deployment:
		return o.Spec.Template
	}
	return corev1.PodTemplateSpec{}
}

func intstrOf(n int) intstr.IntOrString { return intstr.FromInt(n) }
