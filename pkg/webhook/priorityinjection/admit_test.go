package priorityinjection

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// kruiseNS is the namespace kruise runs in, for these tests.
const kruiseNS = "kruise-system"

// serve sends req to the pod webhook mounted on a webhook server's handler
// and returns the answer.
func serve(t *testing.T, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	srv, err := server.New(server.Options{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, errors.New("the handler is called without TLS")
	}})
	require.NoError(t, err)
	require.NoError(t, srv.HandleAdmission(Webhook(kruiseNS)))
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req,
	})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	require.NotNil(t, out.Response)
	return out.Response
}

func TestWebhookPatchesAsReview(t *testing.T) {
	req := request(t, admissionv1.Create, gen.Pod("", gen.SetPodGenerateName("web-"), ctr("sidecar", prio("1")), ctr("main")))
	want, _ := Review(req)
	got := serve(t, req)
	require.True(t, got.Allowed)
	require.NotNil(t, got.PatchType)
	assert.Equal(t, admissionv1.PatchTypeJSONPatch, *got.PatchType)
	assert.JSONEq(t, string(want.Patch), string(got.Patch))
	assert.Equal(t, req.UID, got.UID)
}

func TestWebhookRefusesAsReview(t *testing.T) {
	got := serve(t, request(t, admissionv1.Create, gen.Pod("", gen.SetPodGenerateName("web-"), ctr("a", prio("soon")), ctr("b"))))
	assert.False(t, got.Allowed)
	require.NotNil(t, got.Result)
	assert.EqualValues(t, http.StatusUnprocessableEntity, got.Result.Code)
	assert.Equal(t, metav1.StatusReasonInvalid, got.Result.Reason)
	assert.Contains(t, got.Result.Message, `spec.containers[0].env[0].value: Invalid value: "soon"`)
}

func TestWebhookAllowsUnmarkedPodsUntouched(t *testing.T) {
	got := serve(t, request(t, admissionv1.Create, webPod(ctr("a"), ctr("b"))))
	assert.True(t, got.Allowed)
	assert.Nil(t, got.Patch)
	assert.Nil(t, got.PatchType)
}

// A pod of kube-system or of kruise's own namespace is never touched, even
// marked and even if the configuration sends it: kruise's own pods must be
// created while no replica serves the webhook.
func TestWebhookLeavesKubeSystemAndKruisePodsAlone(t *testing.T) {
	for _, ns := range []string{"kube-system", kruiseNS} {
		req := request(t, admissionv1.Create, gen.Pod("", gen.SetPodGenerateName("web-"), ctr("sidecar", prio("1")), ctr("main")))
		req.Namespace = ns
		got := serve(t, req)
		assert.True(t, got.Allowed, ns)
		assert.Nil(t, got.Patch, ns)
		bad := request(t, admissionv1.Create, gen.Pod("", gen.SetPodGenerateName("web-"), ctr("a", prio("soon")), ctr("b")))
		bad.Namespace = ns
		assert.True(t, serve(t, bad).Allowed, "%s: not even refused", ns)
	}
}

// Every reason Review refuses with is declared, so that the rejection metric
// counts it under its name and not as Other.
func TestWebhookDeclaresEveryReason(t *testing.T) {
	assert.ElementsMatch(t, []string{"InvalidPriority", "InvalidAnnotation", "BarrierEnvSet", "BadRequest", "InternalError"},
		Webhook(kruiseNS).Reasons)
	res := admit(context.Background(), request(t, admissionv1.Create, webPod(ctr("a", prio("x")), ctr("b"))))
	assert.Equal(t, string(ReasonInvalidPriority), res.Reason)
}
