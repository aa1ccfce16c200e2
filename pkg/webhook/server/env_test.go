package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/test/unit/gen"
)

var serial atomic.Int64

// selfSigned is a certificate for 127.0.0.1 and localhost that is its own
// CA, valid for an hour around now.
func selfSigned(t *testing.T, cn string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// env is a Server serving HTTPS on a loopback port with a certificate the
// test can replace, and a client that trusts every certificate the test
// made.
type env struct {
	t      *testing.T
	srv    *Server
	reg    *prometheus.Registry
	cert   atomic.Pointer[tls.Certificate]
	ready  atomic.Pointer[error]
	roots  *x509.CertPool
	base   string
	cancel context.CancelFunc
	done   chan error
}

// newEnv builds a server; register adds its handlers. Call start to serve.
func newEnv(t *testing.T, register func(*Server), mods ...func(*Options)) *env {
	t.Helper()
	e := &env{t: t, reg: prometheus.NewRegistry(), roots: x509.NewCertPool()}
	e.setCert(selfSigned(t, "webhook-1"))
	opts := Options{
		Addr: "127.0.0.1:0",
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return e.cert.Load(), nil
		},
		Ready: func() error {
			if err := e.ready.Load(); err != nil {
				return *err
			}
			return nil
		},
		Metrics: e.reg,
	}
	for _, m := range mods {
		m(&opts)
	}
	srv, err := New(opts)
	require.NoError(t, err)
	e.srv = srv
	if register != nil {
		register(srv)
	}
	return e
}

// startEnv is newEnv, Listen and Serve; the server stops at the end of the
// test.
func startEnv(t *testing.T, register func(*Server), mods ...func(*Options)) *env {
	t.Helper()
	e := newEnv(t, register, mods...)
	e.start()
	return e
}

func (e *env) setCert(c *tls.Certificate) {
	e.roots.AddCert(c.Leaf)
	e.cert.Store(c)
}

func (e *env) start() {
	t := e.t
	if e.srv.listener == nil {
		_, err := e.srv.Listen()
		require.NoError(t, err)
	}
	e.base = "https://" + e.srv.listener.Addr().String()
	_, tctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(tctx)
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- e.srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-e.done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
}

// stop cancels Serve's context and returns what Serve returned.
func (e *env) stop() error {
	e.t.Helper()
	e.cancel()
	select {
	case err := <-e.done:
		e.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		e.t.Fatal("Serve did not return after cancel")
		return nil
	}
}

// client is a fresh client (its own connections) trusting the test's
// certificates.
func (e *env) client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: e.roots, MinVersion: tls.VersionTLS12},
	}}
}

// post sends body to path as JSON and decodes the AdmissionReview answered.
func (e *env) post(path string, body []byte) (int, *admissionv1.AdmissionReview) {
	e.t.Helper()
	return e.do(e.client(), http.MethodPost, path, "application/json", body)
}

func (e *env) do(c *http.Client, method, path, contentType string, body []byte) (int, *admissionv1.AdmissionReview) {
	t := e.t
	t.Helper()
	req, err := http.NewRequest(method, e.base+path, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), "body: %s", data)
	var ar admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(data, &ar), "body: %s", data)
	assert.Equal(t, "admission.k8s.io/v1", ar.APIVersion)
	assert.Equal(t, "AdmissionReview", ar.Kind)
	require.NotNil(t, ar.Response, "body: %s", data)
	return resp.StatusCode, &ar
}

// podReview is an AdmissionReview v1 of creating a pod.
func podReview(t *testing.T, uid types.UID) []byte {
	t.Helper()
	pod, err := json.Marshal(gen.Pod("web", gen.SetPodNamespace("default")))
	require.NoError(t, err)
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       uid,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Name:      "web",
			Namespace: "default",
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: pod},
		},
	})
	require.NoError(t, err)
	return body
}
