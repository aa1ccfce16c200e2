package gen

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// CloneSetModifier changes a CloneSet.
type CloneSetModifier func(*appsv1beta1.CloneSet)

// CloneSet is a v1beta1 CloneSet named name, changed by mods in order.
func CloneSet(name string, mods ...CloneSetModifier) *appsv1beta1.CloneSet {
	return apply(&appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// CloneSetFrom is a copy of cs changed by mods; cs is left as it was.
func CloneSetFrom(cs *appsv1beta1.CloneSet, mods ...CloneSetModifier) *appsv1beta1.CloneSet {
	return apply(cs.DeepCopy(), mods)
}

// SetCloneSetNamespace sets the namespace.
func SetCloneSetNamespace(ns string) CloneSetModifier {
	return func(cs *appsv1beta1.CloneSet) { cs.Namespace = ns }
}

// SetCloneSetUID sets the UID.
func SetCloneSetUID(uid types.UID) CloneSetModifier {
	return func(cs *appsv1beta1.CloneSet) { cs.UID = uid }
}

// SetCloneSetGeneration sets metadata.generation.
func SetCloneSetGeneration(g int64) CloneSetModifier {
	return func(cs *appsv1beta1.CloneSet) { cs.Generation = g }
}

// SetCloneSetReplicas sets spec.replicas.
func SetCloneSetReplicas(n int32) CloneSetModifier {
	return func(cs *appsv1beta1.CloneSet) { cs.Spec.Replicas = &n }
}

// SetCloneSetSelector selects pods by matchLabels.
func SetCloneSetSelector(matchLabels map[string]string) CloneSetModifier {
	return func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

// SetCloneSetTemplate sets spec.template to a copy of t (PodTemplate builds one).
func SetCloneSetTemplate(t *corev1.PodTemplateSpec) CloneSetModifier {
	return func(cs *appsv1beta1.CloneSet) { cs.Spec.Template = *t.DeepCopy() }
}

// SetCloneSetUpdateStrategy sets spec.updateStrategy.
func SetCloneSetUpdateStrategy(s appsv1beta1.CloneSetUpdateStrategy) CloneSetModifier {
	return func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy = s }
}
