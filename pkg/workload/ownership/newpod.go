package ownership

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// PodFromTemplate is a new pod called name in namespace from the pod template t, controlled by
// owner: the template's labels, annotations, finalizers and spec, without the keys kruise writes
// on pods and decides by (appsv1beta1.WithoutReserved), with label and annotation maps the
// caller may add to.
func PodFromTemplate(t *corev1.PodTemplateSpec, name, namespace string, owner metav1.OwnerReference) *corev1.Pod {
	labels, annotations := appsv1beta1.WithoutReserved(t.Labels, t.Annotations)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       namespace,
			Labels:          labels,
			Annotations:     annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	return pod
}
