package conversion

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
	"github.com/nodekruise/kruise/test/unit/metrictest"
)

func TestBadRequestsAreRefusedWith4xx(t *testing.T) {
	e := newEnv(t, Options{MaxBodyBytes: 4096})
	valid := reviewOf(t, "uid-1", alpha, nil)
	v1beta1Review := bytes.Replace(valid, []byte(`"apiextensions.k8s.io/v1"`), []byte(`"apiextensions.k8s.io/v1beta1"`), 1)
	require.NotEqual(t, valid, v1beta1Review)

	for _, tc := range []struct {
		name        string
		method      string
		contentType string
		body        []byte
		code        int
		uid         types.UID
		message     string
	}{
		{name: "v1beta1 review", body: v1beta1Review, code: 400, uid: "uid-1",
			message: `got apiextensions.k8s.io/v1beta1 "ConversionReview": this webhook serves apiextensions.k8s.io/v1 ConversionReview only (set conversionReviewVersions: [v1])`},
		{name: "an AdmissionReview", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a"}}`), code: 400, uid: "a",
			message: `got admission.k8s.io/v1 "AdmissionReview": this webhook serves apiextensions.k8s.io/v1 ConversionReview only`},
		{name: "malformed JSON", body: []byte(`{"apiVersion":`), code: 400, message: "malformed ConversionReview: unexpected end of JSON input"},
		{name: "objects not a list", body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","objects":{}}}`),
			code: 400, uid: "u", message: "malformed ConversionReview: json: cannot unmarshal object"},
		{name: "no request", body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`), code: 400,
			message: "the ConversionReview has no request"},
		{name: "no uid", body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"apps.kruise.io/v1beta1"}}`),
			code: 400, message: "the ConversionReview's request has no uid"},
		{name: "GET", method: http.MethodGet, code: 405, message: "reviews are sent with POST, not GET"},
		{name: "not JSON", contentType: "application/yaml", body: valid, code: 415, message: `content type "application/yaml"`},
		{name: "oversized", body: append(valid[:len(valid)-1:len(valid)-1], []byte(`,"pad":"`+strings.Repeat("x", 4096)+`"}`)...),
			code: 413, message: "request body larger than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, ct := tc.method, tc.contentType
			if method == "" {
				method = http.MethodPost
			}
			if ct == "" {
				ct = "application/json"
			}
			code, resp := e.post(method, ct, tc.body)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.uid, resp.UID)
			assert.Equal(t, metav1.StatusFailure, resp.Result.Status)
			assert.Equal(t, int32(tc.code), resp.Result.Code)
			assert.Contains(t, resp.Result.Message, tc.message)
			assert.Empty(t, resp.ConvertedObjects)
		})
	}
	assert.Equal(t, 9.0, metrictest.Counter(t, e.reg, "kruise_webhook_conversion_requests_total", map[string]string{"result": "error"}))
}

// What cannot be converted fails the whole request (the API server wants
// every object or none) with a message naming the object.
func TestUnconvertibleObjectsFailTheRequest(t *testing.T) {
	e := newEnv(t, Options{})
	ni := gen.NodeImage("node-a")
	ni.TypeMeta = metav1.TypeMeta{APIVersion: beta, Kind: "NodeImage"}
	good := raw(t, ni)[0]
	obj := func(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

	for _, tc := range []struct {
		name    string
		desired string
		objects []runtime.RawExtension
		message string
	}{
		{name: "unknown desired version", desired: "apps.kruise.io/v2", objects: []runtime.RawExtension{good},
			message: `desiredAPIVersion "apps.kruise.io/v2": this webhook converts between apps.kruise.io/v1alpha1 and apps.kruise.io/v1beta1 only`},
		{name: "desired version of another group", desired: "apps/v1", objects: []runtime.RawExtension{good},
			message: `desiredAPIVersion "apps/v1"`},
		{name: "unknown kind", desired: alpha, objects: []runtime.RawExtension{good,
			obj(`{"apiVersion":"apps.kruise.io/v1beta1","kind":"BroadcastJob","metadata":{"namespace":"default","name":"web"}}`)},
			message: `object 1: apps.kruise.io/v1beta1 BroadcastJob "default/web": this webhook converts the kinds [CloneSet ContainerRecreateRequest DaemonSet ImageListPullJob ImagePullJob NodeImage SidecarSet StatefulSet] only`},
		{name: "unknown object version", desired: alpha, objects: []runtime.RawExtension{obj(`{"apiVersion":"apps.kruise.io/v1","kind":"NodeImage","metadata":{"name":"n"}}`)},
			message: `object 0: apps.kruise.io/v1 NodeImage "n": this webhook converts between apps.kruise.io/v1alpha1 and apps.kruise.io/v1beta1 only`},
		{name: "another group", desired: alpha, objects: []runtime.RawExtension{obj(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`)},
			message: `object 0: apps/v1 Deployment "d": this webhook converts apps.kruise.io objects only`},
		{name: "bad apiVersion", desired: alpha, objects: []runtime.RawExtension{obj(`{"apiVersion":"a/b/c","kind":"NodeImage"}`)},
			message: `object 0: a/b/c NodeImage "": unexpected GroupVersion string: a/b/c`},
		{name: "not an object", desired: alpha, objects: []runtime.RawExtension{obj(`["NodeImage"]`)},
			message: "object 0: malformed object: json: cannot unmarshal array"},
		{name: "wrong field type", desired: alpha,
			objects: []runtime.RawExtension{obj(`{"apiVersion":"apps.kruise.io/v1beta1","kind":"NodeImage","metadata":{"name":"n"},"spec":{"images":[]}}`)},
			message: `object 0: apps.kruise.io/v1beta1 NodeImage "n": decoding: json: cannot unmarshal array into Go struct field NodeImageSpec.spec.images`},
		// CRDs newer than this binary: a field the types do not know is not dropped.
		{name: "unknown field", desired: alpha,
			objects: []runtime.RawExtension{obj(`{"apiVersion":"apps.kruise.io/v1beta1","kind":"NodeImage","metadata":{"name":"n"},"spec":{"images":{"app":{"retries":3}}}}`)},
			message: `object 0: apps.kruise.io/v1beta1 NodeImage "n": unknown field "spec.images.app.retries"; converting would drop it: is kruise-controller older than the installed CRDs?`},
		{name: "field in another case", desired: beta,
			objects: []runtime.RawExtension{obj(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImagePullJob","metadata":{"name":"j"},"Spec":{"image":"x"}}`)},
			message: `unknown field "Spec"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, resp := e.post(http.MethodPost, "application/json", reviewOf(t, "uid-f", tc.desired, tc.objects))
			assert.Equal(t, http.StatusOK, code, "a failed conversion is an answer, not a bad request")
			assert.Equal(t, types.UID("uid-f"), resp.UID)
			assert.Equal(t, metav1.StatusFailure, resp.Result.Status)
			assert.Contains(t, resp.Result.Message, tc.message)
			assert.Empty(t, resp.ConvertedObjects)
		})
	}
	assert.Equal(t, 10.0, metrictest.Counter(t, e.reg, "kruise_webhook_conversion_requests_total", map[string]string{"result": "failed"}))
	assert.Zero(t, metrictest.Counter(t, e.reg, "kruise_webhook_converted_objects_total", map[string]string{"kind": "NodeImage", "version": alpha}),
		"objects converted before a failure are not counted")
}

func TestConversionPanicIsAFailedAnswer(t *testing.T) {
	kinds["Boom"] = kindConverter{
		toBeta:  func([]byte) (any, error) { panic("converter bug") },
		toAlpha: func([]byte) (any, error) { panic("converter bug") },
	}
	t.Cleanup(func() { delete(kinds, "Boom") })
	e := newEnv(t, Options{})
	boom := runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"Boom","metadata":{"name":"b"}}`)}
	code, resp := e.post(http.MethodPost, "application/json", reviewOf(t, "uid-p", beta, []runtime.RawExtension{boom}))
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, types.UID("uid-p"), resp.UID)
	assert.Equal(t, metav1.StatusFailure, resp.Result.Status)
	assert.Equal(t, int32(500), resp.Result.Code)
	assert.Equal(t, "internal error converting to apps.kruise.io/v1beta1: converter bug", resp.Result.Message)
	assert.Empty(t, resp.ConvertedObjects)

	// The handler goes on converting.
	ni := gen.NodeImage("node-a")
	ni.TypeMeta = metav1.TypeMeta{APIVersion: beta, Kind: "NodeImage"}
	assert.Len(t, e.convert(alpha, raw(t, ni)), 1)
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, Options{})
	for _, r := range []string{"succeeded", "failed", "error"} {
		assert.Zero(t, metrictest.Counter(t, e.reg, "kruise_webhook_conversion_requests_total", map[string]string{"result": r}), "%s exists at zero", r)
	}
	ni := gen.NodeImage("node-a", gen.SetNodeImagePullSecrets("app", v1beta1.ReferenceObject{Name: "s", Mode: "batch"}))
	ni.TypeMeta = metav1.TypeMeta{APIVersion: beta, Kind: "NodeImage"}
	job := gen.ImagePullJob("j", gen.SetImagePullJobImage("nginx"))
	job.TypeMeta = metav1.TypeMeta{APIVersion: beta, Kind: "ImagePullJob"}
	back := e.convert(beta, e.convert(alpha, raw(t, ni, ni, job)))
	require.Len(t, back, 3)
	e.convert(alpha, nil) // an empty request is a success

	assert.Equal(t, 3.0, metrictest.Counter(t, e.reg, "kruise_webhook_conversion_requests_total", map[string]string{"result": "succeeded"}))
	for labels, want := range map[[2]string]float64{
		{"NodeImage", alpha}: 2, {"NodeImage", beta}: 2, {"ImagePullJob", alpha}: 1, {"ImagePullJob", beta}: 1,
		{"ContainerRecreateRequest", alpha}: 0, {"ImageListPullJob", beta}: 0,
	} {
		assert.Equal(t, want, metrictest.Counter(t, e.reg, "kruise_webhook_converted_objects_total",
			map[string]string{"kind": labels[0], "version": labels[1]}), "%v", labels)
	}
	h := metrictest.Find(t, e.reg, "kruise_webhook_conversion_duration_seconds", map[string]string{})
	require.NotNil(t, h)
	assert.Equal(t, uint64(3), h.GetHistogram().GetSampleCount())

	_, err := NewHandler(Options{Metrics: e.reg})
	assert.ErrorContains(t, err, "registering conversion metrics")
}
