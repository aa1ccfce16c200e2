package controller

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/webhook/ejobrequester"
	"github.com/nodekruise/kruise/pkg/webhook/probeinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

// The PodProbeMarker webhooks are always served; the validation refuses every marker with
// PodProbeMarkerGate or KruiseDaemon off, naming the gate; the serverless pod webhook is served
// only with EnablePodProbeMarkerOnServerless.
func TestPodProbeMarkerWebhooksServedWithTheirGates(t *testing.T) {
	t.Setenv(PodNamespaceEnv, "kruise-system")
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", Operation: admissionv1.Create, Name: "m", Namespace: "team",
			Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "PodProbeMarker"},
			Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "podprobemarkers"},
			Object:   runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"m"},"spec":{}}`)},
		},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		gates, refusal string
		serverless     bool
	}{
		{gates: "", refusal: "spec.selector"},
		{gates: "KruiseDaemon=false", refusal: "feature gate KruiseDaemon is not enabled"},
		{gates: "PodProbeMarkerGate=false", refusal: "feature gate PodProbeMarkerGate is not enabled"},
		{gates: "EnablePodProbeMarkerOnServerless=true", refusal: "spec.selector", serverless: true},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			o := testOptions()
			o.WebhookEnabled = true
			o.WebhookAddr = "127.0.0.1:0"
			o.Features = gateFrom(t, tc.gates)
			d := deps{client: fake.NewClientset(), kruiseClient: kruisefake.NewSimpleClientset(),
				webhookClient: fake.NewClientset(), webhookKruiseClient: kruisefake.NewSimpleClientset()}
			w, err := newWebhooks(o, d, "kruise-system", prometheus.NewRegistry())
			require.NoError(t, err)
			assert.Contains(t, w.paths, ejobrequester.PodProbeMarkerPath)
			assert.Equal(t, tc.serverless, slices.Contains(w.paths, probeinjection.Path))
			_, ctx := ktesting.NewTestContext(t)
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, validate.PodProbeMarkerPath, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			w.server.Handler().ServeHTTP(rec, r)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var out admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			require.NotNil(t, out.Response)
			assert.False(t, out.Response.Allowed)
			assert.Contains(t, out.Response.Result.Message, tc.refusal)
		})
	}
}
