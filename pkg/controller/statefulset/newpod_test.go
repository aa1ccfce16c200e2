package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

func TestNewPodIdentity(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
	}
	r := PodRecipe{Owner: metav1.OwnerReference{Name: "web", UID: "set-uid"}, Namespace: "ns", Set: "web", ServiceName: "web-svc",
		Template: tmpl, Revision: "web-abc", MatchLabels: map[string]string{"app": "web"},
		ClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}}}}}
	pod := NewPod(r, 4, t0)
	assert.Equal(t, "web-4", pod.Name)
	assert.Equal(t, "ns", pod.Namespace)
	assert.Equal(t, "web-4", pod.Spec.Hostname)
	assert.Equal(t, "web-svc", pod.Spec.Subdomain)
	assert.Equal(t, "web-4", pod.Labels[PodNameLabel])
	assert.Equal(t, "4", pod.Labels[PodIndexLabel])
	assert.Equal(t, "web-abc", pod.Labels[appsv1.ControllerRevisionHashLabelKey])
	assert.Equal(t, "web", pod.Labels["app"])
	assert.Equal(t, string(pub.LifecycleStatePreparingNormal), pod.Labels[pub.LifecycleStateKey])
	assert.Equal(t, []metav1.OwnerReference{r.Owner}, pod.OwnerReferences)
	assert.Equal(t, []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-4"}}}}, pod.Spec.Volumes)
	assert.False(t, inplace.DeclaresReadinessGate(pod), "no InPlaceUpdateReady gate the template lacks")
	assert.False(t, readinessgate.Declared(pod), "no KruisePodReady gate without a markPodNotReady hook")
	assert.NotContains(t, tmpl.Labels, PodNameLabel, "template not changed")

	r.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	assert.True(t, readinessgate.Declared(NewPod(r, 0, t0)), "markPodNotReady needs the KruisePodReady gate")

	claims := NewClaims(r, 4)
	assert.Len(t, claims, 1)
	assert.Equal(t, "data-web-4", claims[0].Name)
	assert.Equal(t, "ns", claims[0].Namespace)
	assert.Equal(t, map[string]string{"tier": "db", "app": "web"}, claims[0].Labels)
	assert.Empty(t, claims[0].OwnerReferences)
}

// Gate PodIndexLabel off: no apps.kubernetes.io/pod-index label (OpenKruise without the gate);
// the rest of the identity is the same.
func TestNewPodWithoutIndexLabel(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}}}
	r := PodRecipe{Namespace: "ns", Set: "web", Template: tmpl, Revision: "web-abc"}
	assert.Equal(t, "2", NewPod(r, 2, t0).Labels[PodIndexLabel], "the default writes it")
	r.NoIndexLabel = true
	pod := NewPod(r, 2, t0)
	assert.NotContains(t, pod.Labels, PodIndexLabel)
	assert.Equal(t, "web-2", pod.Labels[PodNameLabel])
	assert.Equal(t, "web-abc", pod.Labels[appsv1.ControllerRevisionHashLabelKey])
}
