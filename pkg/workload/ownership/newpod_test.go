package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodFromTemplate(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "forged"},
			Finalizers: []string{"example.com/keep"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}},
	}
	owner := metav1.OwnerReference{Name: "web", UID: "web-uid"}
	pod := PodFromTemplate(tmpl, "web-0", "ns", owner)
	assert.Equal(t, metav1.ObjectMeta{Name: "web-0", Namespace: "ns", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{},
		Finalizers: []string{"example.com/keep"}, OwnerReferences: []metav1.OwnerReference{owner}}, pod.ObjectMeta,
		"the revision label is kruise's to write, not the template's")
	assert.Equal(t, tmpl.Spec, pod.Spec)
}
