package gen

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// StatefulSetModifier changes an Advanced StatefulSet.
type StatefulSetModifier func(*appsv1beta1.StatefulSet)

// StatefulSet is a v1beta1 Advanced StatefulSet named name, changed by mods in order.
func StatefulSet(name string, mods ...StatefulSetModifier) *appsv1beta1.StatefulSet {
	return apply(&appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// StatefulSetFrom is a copy of set changed by mods; set is left as it was.
func StatefulSetFrom(set *appsv1beta1.StatefulSet, mods ...StatefulSetModifier) *appsv1beta1.StatefulSet {
	return apply(set.DeepCopy(), mods)
}

// SetStatefulSetNamespace sets the namespace.
func SetStatefulSetNamespace(ns string) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) { set.Namespace = ns }
}

// SetStatefulSetUID sets the UID.
func SetStatefulSetUID(uid types.UID) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) { set.UID = uid }
}

// SetStatefulSetGeneration sets metadata.generation.
func SetStatefulSetGeneration(g int64) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) { set.Generation = g }
}

// SetStatefulSetReplicas sets spec.replicas.
func SetStatefulSetReplicas(n int32) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) { set.Spec.Replicas = &n }
}

// SetStatefulSetSelector selects pods by matchLabels.
func SetStatefulSetSelector(matchLabels map[string]string) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) {
		set.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

// SetStatefulSetTemplate sets spec.template to a copy of t (PodTemplate builds one).
func SetStatefulSetTemplate(t *corev1.PodTemplateSpec) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) { set.Spec.Template = *t.DeepCopy() }
}

// SetStatefulSetUpdateStrategy sets spec.updateStrategy.
func SetStatefulSetUpdateStrategy(s appsv1beta1.StatefulSetUpdateStrategy) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) { set.Spec.UpdateStrategy = s }
}

// SetStatefulSetServiceName sets spec.serviceName, the governing Service.
func SetStatefulSetServiceName(name string) StatefulSetModifier {
	return func(set *appsv1beta1.StatefulSet) { set.Spec.ServiceName = name }
}
