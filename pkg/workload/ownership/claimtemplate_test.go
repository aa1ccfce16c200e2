package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClaimFromTemplate(t *testing.T) {
	tmpl := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "elsewhere", UID: "tmpl-uid", ResourceVersion: "7",
			Labels: map[string]string{"tier": "db"}, OwnerReferences: []metav1.OwnerReference{{Name: "someone"}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	got := ClaimFromTemplate(tmpl, "data-web-0", "ns", map[string]string{"app": "web"})
	assert.Equal(t, metav1.ObjectMeta{Name: "data-web-0", Namespace: "ns", Labels: map[string]string{"tier": "db", "app": "web"}}, got.ObjectMeta)
	assert.Equal(t, corev1.PersistentVolumeClaimStatus{}, got.Status)
	assert.Equal(t, "tmpl-uid", string(tmpl.UID), "the template is not touched")
}

func TestMountClaims(t *testing.T) {
	spec := &corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}}
	templates := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}, {ObjectMeta: metav1.ObjectMeta{Name: "logs"}}}
	MountClaims(spec, templates, func(t string) string { return t + "-web-0" })
	claim := func(name string) corev1.VolumeSource {
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
	}
	assert.Equal(t, []corev1.Volume{
		{Name: "data", VolumeSource: claim("data-web-0")},
		{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "logs", VolumeSource: claim("logs-web-0")},
	}, spec.Volumes)
}
