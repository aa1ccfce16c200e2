package conversion

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// env is the handler behind an HTTPS test server (a self-signed
// certificate httptest makes) and a registry of its metrics.
type env struct {
	t   *testing.T
	srv *httptest.Server
	reg *prometheus.Registry
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Metrics = reg
	h, err := NewHandler(opts)
	require.NoError(t, err)
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, reg: reg}
}

// raw encodes objects as a review carries them.
func raw(t *testing.T, objs ...any) []runtime.RawExtension {
	t.Helper()
	out := make([]runtime.RawExtension, len(objs))
	for i, o := range objs {
		data, err := json.Marshal(o)
		require.NoError(t, err)
		out[i] = runtime.RawExtension{Raw: data}
	}
	return out
}

// reviewOf is a ConversionReview v1 of objects to desired.
func reviewOf(t *testing.T, uid types.UID, desired string, objects []runtime.RawExtension) []byte {
	t.Helper()
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: uid, DesiredAPIVersion: desired, Objects: objects},
	})
	require.NoError(t, err)
	return body
}

// post sends body and decodes the ConversionReview answered.
func (e *env) post(method, contentType string, body []byte) (int, *apiextensionsv1.ConversionResponse) {
	t := e.t
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+Path, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var cr apiextensionsv1.ConversionReview
	require.NoError(t, json.Unmarshal(data, &cr), "body: %s", data)
	assert.Equal(t, "apiextensions.k8s.io/v1", cr.APIVersion)
	assert.Equal(t, "ConversionReview", cr.Kind)
	require.NotNil(t, cr.Response, "body: %s", data)
	return resp.StatusCode, cr.Response
}

// convert converts objects to desired and requires success.
func (e *env) convert(desired string, objects []runtime.RawExtension) []runtime.RawExtension {
	e.t.Helper()
	code, resp := e.post(http.MethodPost, "application/json", reviewOf(e.t, "uid-ok", desired, objects))
	require.Equal(e.t, http.StatusOK, code)
	require.Equal(e.t, metav1.StatusSuccess, resp.Result.Status, resp.Result.Message)
	assert.Equal(e.t, types.UID("uid-ok"), resp.UID)
	require.Len(e.t, resp.ConvertedObjects, len(objects))
	return resp.ConvertedObjects
}
