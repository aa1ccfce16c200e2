package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/test/unit/metrictest"
)

const labelPatch = `[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`

func TestAdmissionRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		result Result
		want   admissionv1.AdmissionResponse // UID is filled in
	}{
		{name: "allowed", result: Allowed(), want: admissionv1.AdmissionResponse{Allowed: true}},
		{name: "allowed with warnings", result: Allowed("image tag latest"),
			want: admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"image tag latest"}}},
		{name: "denied", result: Denied("BarrierEnvSet", "env KRUISE_CONTAINER_BARRIER is set by kruise"),
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 403,
				Reason: metav1.StatusReasonForbidden, Message: "env KRUISE_CONTAINER_BARRIER is set by kruise"}}},
		{name: "invalid", result: Invalid("InvalidPriority", `KRUISE_CONTAINER_PRIORITY "x" is not an integer`),
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 422,
				Reason: metav1.StatusReasonInvalid, Message: `KRUISE_CONTAINER_PRIORITY "x" is not an integer`}}},
		{name: "denied with a code of its own", result: Result{Reason: "Gone", Message: "pod is gone", Code: 404},
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 404,
				Reason: metav1.StatusReasonNotFound, Message: "pod is gone"}}},
		{name: "429 carries TooManyRequests, which eviction clients retry", result: Result{Reason: "Budget", Message: "not now", Code: 429},
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 429,
				Reason: metav1.StatusReasonTooManyRequests, Message: "not now"}}},
		{name: "denied with a code below 400 becomes 403", result: Result{Message: "no", Code: 200},
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 403,
				Reason: metav1.StatusReasonForbidden, Message: "no"}}},
		{name: "the zero result denies", result: Result{},
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 403, Reason: metav1.StatusReasonForbidden}}},
		{name: "patched", result: Patched([]byte(labelPatch)),
			want: admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(labelPatch), PatchType: ptr(admissionv1.PatchTypeJSONPatch)}},
		{name: "an empty patch is no patch", result: Patched([]byte(`[]`)), want: admissionv1.AdmissionResponse{Allowed: true}},
		{name: "a denial carries no patch", result: Result{Patch: []byte(labelPatch), Message: "no"},
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 403, Reason: metav1.StatusReasonForbidden, Message: "no"}}},
		{name: "handler error", result: Errored(errors.New("reading pod default/web: connection refused")),
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 500,
				Reason: metav1.StatusReasonInternalError, Message: "reading pod default/web: connection refused"}}},
		{name: "invalid patch", result: Patched([]byte(`{"op":"add"}`)),
			want: admissionv1.AdmissionResponse{Result: &metav1.Status{Status: "Failure", Code: 500,
				Reason:  metav1.StatusReasonInternalError,
				Message: "the webhook returned an invalid JSON patch: json: cannot unmarshal object into Go value of type jsonpatch.Patch"}}},
	}
	var (
		current Result
		seen    *admissionv1.AdmissionRequest
	)
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.HandleAdmission(Webhook{Name: "pod", Path: "/mutate-pod",
			Reasons: []string{"BarrierEnvSet", "InvalidPriority"},
			Admitter: AdmitFunc(func(_ context.Context, req *admissionv1.AdmissionRequest) Result {
				seen = req.DeepCopy()
				return current
			})}))
	})
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			current, seen = tc.result, nil
			uid := types.UID("uid-" + strings.ReplaceAll(tc.name, " ", "-"))
			code, ar := e.post("/mutate-pod", podReview(t, uid))
			assert.Equal(t, http.StatusOK, code)
			want := tc.want
			want.UID = uid
			assert.Equal(t, &want, ar.Response)
			require.NotNil(t, seen, "case %d: the handler was not called", i)
			assert.Equal(t, uid, seen.UID)
			assert.Equal(t, "web", seen.Name)
			assert.Equal(t, admissionv1.Create, seen.Operation)
			assert.Contains(t, string(seen.Object.Raw), `"name":"web"`)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestAdmissionRefusesBadRequests(t *testing.T) {
	called := false
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.HandleAdmission(Webhook{Name: "pod", Path: "/mutate-pod",
			Admitter: AdmitFunc(func(context.Context, *admissionv1.AdmissionRequest) Result {
				called = true
				return Allowed()
			})}))
	})
	valid := podReview(t, "uid-1")
	v1beta1 := bytes.Replace(valid, []byte(`"admission.k8s.io/v1"`), []byte(`"admission.k8s.io/v1beta1"`), 1)
	require.NotEqual(t, valid, v1beta1)
	huge := append(append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","name":"`),
		bytes.Repeat([]byte("x"), MaxAdmissionBodyBytes)...), `"}}`...)

	tests := []struct {
		name        string
		method      string
		contentType string
		body        []byte
		code        int
		uid         types.UID
		message     string
	}{
		{name: "v1beta1 review", body: v1beta1, code: 400, uid: "uid-1",
			message: `got admission.k8s.io/v1beta1 "AdmissionReview": this webhook serves admission.k8s.io/v1 AdmissionReview only (set admissionReviewVersions: [v1])`},
		{name: "not a review", body: []byte(`{"apiVersion":"v1","kind":"Pod"}`), code: 400,
			message: `got v1 "Pod": this webhook serves admission.k8s.io/v1 AdmissionReview only`},
		{name: "no apiVersion", body: []byte(`{"request":{"uid":"u2"}}`), code: 400, uid: "u2",
			message: `got no apiVersion "": this webhook serves`},
		{name: "malformed JSON", body: []byte(`{"apiVersion":"admission.k8s.io/v1",`), code: 400,
			message: "malformed AdmissionReview: unexpected end of JSON input"},
		{name: "wrong type in request", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u3","operation":7}}`),
			code: 400, uid: "u3", message: "malformed AdmissionReview: json: cannot unmarshal number into Go struct field"},
		{name: "no request", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), code: 400,
			message: "the AdmissionReview has no request"},
		{name: "no uid", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"name":"x"}}`), code: 400,
			message: "the AdmissionReview's request has no uid"},
		{name: "empty body", body: nil, code: 400, message: "empty request body"},
		{name: "GET", method: http.MethodGet, body: nil, code: 405, message: "reviews are sent with POST, not GET"},
		{name: "not JSON", contentType: "text/plain", body: valid, code: 415,
			message: `content type "text/plain": reviews are sent as application/json`},
		{name: "no content type", contentType: "-", body: valid, code: 415, message: `content type "": reviews are sent as application/json`},
		{name: "oversized body", body: huge, code: 413, message: "request body larger than 7340032 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called = false
			method, ct := tc.method, tc.contentType
			if method == "" {
				method = http.MethodPost
			}
			switch ct {
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			code, ar := e.do(e.client(), method, "/mutate-pod", ct, tc.body)
			assert.Equal(t, tc.code, code)
			assert.False(t, called, "the handler must not see a bad request")
			resp := ar.Response
			assert.Equal(t, tc.uid, resp.UID)
			assert.False(t, resp.Allowed)
			require.NotNil(t, resp.Result)
			assert.Equal(t, int32(tc.code), resp.Result.Code)
			assert.Equal(t, metav1.StatusFailure, resp.Result.Status)
			assert.Contains(t, resp.Result.Message, tc.message)
		})
	}
	// A JSON content type with parameters is JSON.
	code, ar := e.do(e.client(), http.MethodPost, "/mutate-pod", "application/json; charset=utf-8", valid)
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, ar.Response.Allowed)

	assert.Equal(t, float64(len(tests)), metrictest.Counter(t, e.reg, "kruise_webhook_admission_requests_total",
		map[string]string{"webhook": "pod", "result": "error"}))
	for _, reason := range []string{ReasonOther, ReasonHandlerError, ReasonPanic, ReasonInvalidPatch} {
		assert.Zero(t, metrictest.Counter(t, e.reg, "kruise_webhook_admission_rejections_total",
			map[string]string{"webhook": "pod", "reason": reason}), "a bad request is not a rejection (%s)", reason)
	}
}

func TestAdmissionHandlerPanicIsAnErrorAnswer(t *testing.T) {
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.HandleAdmission(Webhook{Name: "crash", Path: "/crash",
			Admitter: AdmitFunc(func(_ context.Context, req *admissionv1.AdmissionRequest) Result {
				if req.Name == "web" {
					var m map[string]int
					m["boom"]++ // a nil-map write: a runtime panic
				}
				return Allowed()
			})}))
	})
	c := e.client() // one client: the connection survives the panic
	for i := range 3 {
		uid := types.UID("uid-" + string(rune('a'+i)))
		code, ar := e.do(c, http.MethodPost, "/crash", "application/json", podReview(t, uid))
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, uid, ar.Response.UID)
		assert.False(t, ar.Response.Allowed)
		require.NotNil(t, ar.Response.Result)
		assert.Equal(t, int32(500), ar.Response.Result.Code)
		assert.Equal(t, "internal error in webhook crash: the handler panicked: assignment to entry in nil map", ar.Response.Result.Message)
	}
	// The server still serves, on the same path with a request that does not panic.
	other := bytes.Replace(podReview(t, "uid-ok"), []byte(`"name":"web","namespace"`), []byte(`"name":"db","namespace"`), 1)
	code, ar := e.do(c, http.MethodPost, "/crash", "application/json", other)
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, ar.Response.Allowed)
	assert.Equal(t, types.UID("uid-ok"), ar.Response.UID)

	assert.Equal(t, 3.0, metrictest.Counter(t, e.reg, "kruise_webhook_admission_rejections_total", map[string]string{"webhook": "crash", "reason": ReasonPanic}))
	assert.Equal(t, 3.0, metrictest.Counter(t, e.reg, "kruise_webhook_admission_requests_total", map[string]string{"webhook": "crash", "result": "error"}))
	assert.Equal(t, 1.0, metrictest.Counter(t, e.reg, "kruise_webhook_admission_requests_total", map[string]string{"webhook": "crash", "result": "allowed"}))
}

func TestAdmissionContextCarriesTheAPIServerTimeout(t *testing.T) {
	var remaining time.Duration
	var hasDeadline bool
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.HandleAdmission(Webhook{Name: "pod", Path: "/mutate-pod",
			Admitter: AdmitFunc(func(ctx context.Context, _ *admissionv1.AdmissionRequest) Result {
				var d time.Time
				d, hasDeadline = ctx.Deadline()
				remaining = time.Until(d)
				return Allowed()
			})}))
	})
	for _, tc := range []struct {
		query    string
		min, max time.Duration
	}{
		{query: "?timeout=2s", min: time.Second, max: 2 * time.Second},
		{query: "", min: MaxHandlerTimeout - 10*time.Second, max: MaxHandlerTimeout},
		{query: "?timeout=5m", min: MaxHandlerTimeout - 10*time.Second, max: MaxHandlerTimeout},
		{query: "?timeout=bogus", min: MaxHandlerTimeout - 10*time.Second, max: MaxHandlerTimeout},
	} {
		code, _ := e.post("/mutate-pod"+tc.query, podReview(t, "uid"))
		require.Equal(t, http.StatusOK, code)
		require.True(t, hasDeadline, tc.query)
		assert.True(t, remaining > tc.min && remaining <= tc.max, "%s: %v left", tc.query, remaining)
	}
}

func TestHandleAdmissionRefusesBadRegistrations(t *testing.T) {
	allow := AdmitFunc(func(context.Context, *admissionv1.AdmissionRequest) Result { return Allowed() })
	e := newEnv(t, nil)
	require.NoError(t, e.srv.HandleAdmission(Webhook{Name: "pod", Path: "/mutate-pod", Admitter: allow, Reasons: []string{"A"}}))
	for _, tc := range []struct {
		w   Webhook
		err string
	}{
		{Webhook{Name: "other", Path: "/mutate-pod", Admitter: allow}, `path "/mutate-pod" is already registered`},
		{Webhook{Name: "pod", Path: "/validate-pod", Admitter: allow}, `a webhook named "pod" is already registered`},
		{Webhook{Name: "", Path: "/x", Admitter: allow}, `webhook name "" must be non-empty`},
		{Webhook{Name: "a b", Path: "/x", Admitter: allow}, `webhook name "a b" must be non-empty, without spaces`},
		{Webhook{Name: "x", Path: "/x"}, "webhook x has no Admitter"},
		{Webhook{Name: "x", Path: "x", Admitter: allow}, `path "x" must start with /`},
		{Webhook{Name: "x", Path: "/x/", Admitter: allow}, `path "/x/" must start with /, not end with /`},
		{Webhook{Name: "x", Path: "/", Admitter: allow}, `path "/" must start with /, not end with /`},
		{Webhook{Name: "x", Path: "/x/{name}", Admitter: allow}, `must start with /, not end with / and name one endpoint`},
		{Webhook{Name: "x", Path: "/x", Admitter: allow, Reasons: []string{"Panic"}}, `reason "Panic" is the server's own`},
		{Webhook{Name: "x", Path: "/x", Admitter: allow, Reasons: []string{"A", "A"}}, `reason "A" declared twice`},
		{Webhook{Name: "x", Path: "/x", Admitter: allow, Reasons: []string{""}}, `reason "" must be non-empty`},
	} {
		assert.ErrorContains(t, e.srv.HandleAdmission(tc.w), tc.err)
	}
	// A failed registration claims nothing.
	require.NoError(t, e.srv.HandleAdmission(Webhook{Name: "x", Path: "/x", Admitter: allow}))
}

func TestResponseEncodesAsTheAPIServerReadsIt(t *testing.T) {
	resp, out := response("u", Patched([]byte(labelPatch)), nil)
	assert.Equal(t, outcome{result: resultPatched}, out)
	data, err := json.Marshal(resp)
	require.NoError(t, err)
	// The patch travels base64-encoded, with its type.
	assert.JSONEq(t, `{"uid":"u","allowed":true,"patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7ImEiOiJiIn19XQ==","patchType":"JSONPatch"}`, string(data))
}
