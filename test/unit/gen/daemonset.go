package gen

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// DaemonSetModifier changes an Advanced DaemonSet.
type DaemonSetModifier func(*appsv1beta1.DaemonSet)

// DaemonSet is a v1beta1 Advanced DaemonSet named name, changed by mods in order.
func DaemonSet(name string, mods ...DaemonSetModifier) *appsv1beta1.DaemonSet {
	return apply(&appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// DaemonSetFrom is a copy of ds changed by mods; ds is left as it was.
func DaemonSetFrom(ds *appsv1beta1.DaemonSet, mods ...DaemonSetModifier) *appsv1beta1.DaemonSet {
	return apply(ds.DeepCopy(), mods)
}

// SetDaemonSetNamespace sets the namespace.
func SetDaemonSetNamespace(ns string) DaemonSetModifier {
	return func(ds *appsv1beta1.DaemonSet) { ds.Namespace = ns }
}

// SetDaemonSetUID sets the UID.
func SetDaemonSetUID(uid types.UID) DaemonSetModifier {
	return func(ds *appsv1beta1.DaemonSet) { ds.UID = uid }
}

// SetDaemonSetGeneration sets metadata.generation.
func SetDaemonSetGeneration(g int64) DaemonSetModifier {
	return func(ds *appsv1beta1.DaemonSet) { ds.Generation = g }
}

// SetDaemonSetSelector selects pods by matchLabels.
func SetDaemonSetSelector(matchLabels map[string]string) DaemonSetModifier {
	return func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

// SetDaemonSetTemplate sets spec.template to a copy of t (PodTemplate builds one).
func SetDaemonSetTemplate(t *corev1.PodTemplateSpec) DaemonSetModifier {
	return func(ds *appsv1beta1.DaemonSet) { ds.Spec.Template = *t.DeepCopy() }
}

// SetDaemonSetUpdateStrategy sets spec.updateStrategy.
func SetDaemonSetUpdateStrategy(s appsv1beta1.DaemonSetUpdateStrategy) DaemonSetModifier {
	return func(ds *appsv1beta1.DaemonSet) { ds.Spec.UpdateStrategy = s }
}
