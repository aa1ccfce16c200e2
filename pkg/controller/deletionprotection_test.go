package controller

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/webhook/deletionprotection"
)

// DeletionProtectionForCRDCascadingGate is forced off without
// ResourcesDeletionProtection, as in OpenKruise.
func TestDeletionProtectionGates(t *testing.T) {
	for _, tc := range []struct {
		gates             string
		enabled, cascades bool
	}{
		{gates: ""},
		{gates: "ResourcesDeletionProtection=true", enabled: true},
		{gates: "ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true", enabled: true, cascades: true},
		{gates: "DeletionProtectionForCRDCascadingGate=true"},
		{gates: "AllAlpha=true"},
		{gates: "AllBeta=true,AllAlpha=true", enabled: true, cascades: true},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			o := testOptions()
			o.Features = gateFrom(t, tc.gates)
			enabled, cascades := o.deletionProtection()
			assert.Equal(t, tc.enabled, enabled)
			assert.Equal(t, tc.cascades, cascades)
		})
	}
}

// The deletion-protection webhook is served only with ResourcesDeletionProtection, and reads
// the namespace's pods with the webhook client.
func TestDeletionProtectionWebhookServedWithItsGate(t *testing.T) {
	t.Setenv(PodNamespaceEnv, "kruise-system")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{deletionprotection.Label: deletionprotection.Cascading}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", Operation: admissionv1.Delete, Name: "prod",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Namespace"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"},
			OldObject: runtime.RawExtension{Raw: mustJSON(t, ns)},
		},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		gates string
		code  int
	}{{gates: "", code: http.StatusNotFound}, {gates: "ResourcesDeletionProtection=true", code: http.StatusOK}} {
		t.Run(tc.gates, func(t *testing.T) {
			o := testOptions()
			o.WebhookEnabled = true
			o.WebhookAddr = "127.0.0.1:0"
			o.Features = gateFrom(t, tc.gates)
			d := deps{client: fake.NewClientset(), kruiseClient: kruisefake.NewSimpleClientset(),
				webhookClient: fake.NewClientset(pod), webhookKruiseClient: kruisefake.NewSimpleClientset()}
			w, err := newWebhooks(o, d, "kruise-system", prometheus.NewRegistry())
			require.NoError(t, err)
			_, ctx := ktesting.NewTestContext(t)
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, deletionprotection.Path, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			w.server.Handler().ServeHTTP(rec, r)
			require.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.code != http.StatusOK {
				assert.NotContains(t, w.paths, deletionprotection.Path)
				return
			}
			assert.Contains(t, w.paths, deletionprotection.Path)
			var out admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			require.NotNil(t, out.Response)
			assert.False(t, out.Response.Allowed)
			assert.Contains(t, out.Response.Result.Message, "still holds 1 active pod")
		})
	}
}
