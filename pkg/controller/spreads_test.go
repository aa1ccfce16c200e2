package controller

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/webhook/spreadinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

func spreadRequest(t *testing.T, ws *appsv1alpha1.WorkloadSpread) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e40", Operation: admissionv1.Create, Namespace: "default", DryRun: ptr.To(false),
		Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "WorkloadSpread"},
		Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "workloadspreads"},
		Object:   runtime.RawExtension{Raw: mustJSON(t, ws)},
	}
}

// With gate WorkloadSpread (on by default) every replica serves the spreads' validation and the
// pod placement; with it off, only the validation, refusing every spread.
func TestWorkloadSpreadWebhooksServed(t *testing.T) {
	one := intstr.FromInt32(1)
	spread := &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: "ws", Namespace: "default", UID: "ws-uid"},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			Subsets:         []appsv1alpha1.WorkloadSpreadSubset{{Name: "a", MaxReplicas: &one}, {Name: "b"}},
		},
	}
	m, v := webhookConfigs()
	client := fake.NewClientset(m, v)
	h := startWithWebhooksAndKruise(t, testOptions(), client, kruisefake.NewSimpleClientset(spread))
	require.Eventually(t, func() bool { code, _ := h.get(t, "/readyz"); return code == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
	ca := caFromConfig(t, client)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-aaaaa", Namespace: "default", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
	resp := h.review(t, ca, spreadinjection.Path, &admissionv1.AdmissionRequest{
		UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e41", Operation: admissionv1.Create, Namespace: "default", Name: pod.Name, DryRun: ptr.To(true),
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:   runtime.RawExtension{Raw: mustJSON(t, pod)},
	})
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Contains(t, string(resp.Patch), `matched-workloadspread`, "placed in a subset")

	bad := spread.DeepCopy()
	bad.Name, bad.Spec.Subsets = "bad", nil
	resp = h.review(t, ca, validate.WorkloadSpreadPath, spreadRequest(t, bad))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "at least one subset")

	off := testOptions()
	off.Features = gateFrom(t, "WorkloadSpread=false")
	m, v = webhookConfigs()
	client = fake.NewClientset(m, v)
	h = startWithWebhooks(t, off, client)
	require.Eventually(t, func() bool { code, _ := h.get(t, "/readyz"); return code == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
	resp = h.review(t, caFromConfig(t, client), validate.WorkloadSpreadPath, spreadRequest(t, spread))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "turn on feature gate WorkloadSpread")
}

// The webhooks' ReplicaSet cache keeps a ReplicaSet's name and owners, not its template.
func TestLeanReplicaSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}},
	}
	out, err := leanReplicaSet(rs)
	require.NoError(t, err)
	assert.Equal(t, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u", ResourceVersion: "7",
		OwnerReferences: rs.OwnerReferences}}, out)
}
