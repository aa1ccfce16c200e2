package validate

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const ns = "team"

// request is the admission request the API server sends for the CREATE of
// obj as resource (apps.kruise.io/v1beta1, or version when given).
func request(t *testing.T, resource, kind string, obj runtime.Object, version ...string) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	v := "v1beta1"
	if len(version) > 0 {
		v = version[0]
	}
	return &admissionv1.AdmissionRequest{
		UID: "req-1", Operation: admissionv1.Create, Namespace: ns,
		Kind:     metav1.GroupVersionKind{Group: group, Version: v, Kind: kind},
		Resource: metav1.GroupVersionResource{Group: group, Version: v, Resource: resource},
		Object:   runtime.RawExtension{Raw: raw},
	}
}

// served is a webhook mounted on a webhook server, with its metrics.
type served struct {
	srv *server.Server
	reg *prometheus.Registry
	wh  server.Webhook
}

func serve(t *testing.T, wh server.Webhook) *served {
	t.Helper()
	reg := prometheus.NewRegistry()
	srv, err := server.New(server.Options{Metrics: reg, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, errors.New("the handler is called without TLS")
	}})
	require.NoError(t, err)
	require.NoError(t, srv.HandleAdmission(wh))
	return &served{srv: srv, reg: reg, wh: wh}
}

// send posts req as the API server does and returns the answer.
func (s *served) send(t *testing.T, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req,
	})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, s.wh.Path+"?timeout=5s", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.srv.Handler().ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	require.NotNil(t, out.Response)
	require.Equal(t, req.UID, out.Response.UID)
	return out.Response
}

// rejections is kruise_webhook_admission_rejections_total of the webhook
// for reason.
func (s *served) rejections(t *testing.T, reason string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "kruise_webhook_admission_rejections_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["webhook"] == s.wh.Name && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no rejection series for webhook %s reason %s", s.wh.Name, reason)
	return 0
}

// denied checks that resp refuses the object with 422 Invalid and a message
// holding every part of want.
func denied(t *testing.T, resp *admissionv1.AdmissionResponse, want ...string) {
	t.Helper()
	require.False(t, resp.Allowed, "want a refusal")
	require.NotNil(t, resp.Result)
	require.EqualValues(t, http.StatusUnprocessableEntity, resp.Result.Code)
	require.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
	for _, w := range want {
		require.Contains(t, resp.Result.Message, w)
	}
}

// judged sends req to s and checks the answer: admitted when reason is "",
// else refused with every part of message and counted under reason.
func (s *served) judged(t *testing.T, req *admissionv1.AdmissionRequest, reason string, message ...string) {
	t.Helper()
	resp := s.send(t, req)
	if reason == "" {
		require.True(t, resp.Allowed, "refused: %v", resp.Result)
		return
	}
	denied(t, resp, message...)
	require.EqualValues(t, 1, s.rejections(t, reason))
}
