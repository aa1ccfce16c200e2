package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/process/healthz"
)

func allowAll(s *Server) {
	if err := s.HandleAdmission(Webhook{Name: "pod", Path: "/mutate-pod",
		Admitter: AdmitFunc(func(context.Context, *admissionv1.AdmissionRequest) Result { return Allowed() })}); err != nil {
		panic(err)
	}
}

func TestNewAndServeRefuseMisuse(t *testing.T) {
	_, err := New(Options{})
	assert.ErrorContains(t, err, "GetCertificate is required")

	e := newEnv(t, nil)
	assert.Equal(t, "127.0.0.1:0", e.srv.opts.Addr)
	assert.ErrorContains(t, e.srv.Serve(context.Background()), "Serve called before Listen")

	s, err := New(Options{GetCertificate: e.srv.opts.GetCertificate})
	require.NoError(t, err)
	assert.Equal(t, DefaultAddr, s.opts.Addr)
	assert.Equal(t, DefaultShutdownTimeout, s.opts.ShutdownTimeout)

	// The metrics are registered once per registry.
	_, err = New(Options{GetCertificate: e.srv.opts.GetCertificate, Metrics: e.reg})
	assert.ErrorContains(t, err, "registering webhook metrics")

	// A port in use is reported by Listen.
	busy := startEnv(t, nil)
	_, err = newEnv(t, nil, func(o *Options) { o.Addr = busy.base[len("https://"):] }).srv.Listen()
	assert.ErrorContains(t, err, "listening for webhooks on")
}

// readyz serves the server's check the way the controller's health
// endpoint does.
func readyz(t *testing.T, s *Server) (int, string) {
	t.Helper()
	h := healthz.New(healthz.Options{Readyz: []healthz.Checker{s.ReadyCheck()}}).Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
	return rec.Code, rec.Body.String()
}

func TestReadiness(t *testing.T) {
	e := newEnv(t, allowAll)
	notYet := errors.New(`CA not yet in kruise-mutating-webhook-configuration`)
	e.ready.Store(&notYet)
	check := e.srv.ReadyCheck()
	assert.Equal(t, "webhook", check.Name())

	assert.EqualError(t, check.Check(nil), "the webhook server is not serving yet")
	_, err := e.srv.Listen()
	require.NoError(t, err)
	assert.EqualError(t, check.Check(nil), "the webhook server is not serving yet", "bound is not serving")

	e.start() // serves on the listener bound above
	require.Eventually(t, func() bool { return e.srv.serving.Load() }, 10*time.Second, time.Millisecond)
	assert.EqualError(t, check.Check(nil), "webhook certificate: CA not yet in kruise-mutating-webhook-configuration")
	code, body := readyz(t, e.srv)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "[-]webhook failed: webhook certificate: CA not yet in kruise-mutating-webhook-configuration")

	e.ready.Store(nil)
	assert.NoError(t, check.Check(nil))
	code, body = readyz(t, e.srv)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "[+]webhook ok")

	require.NoError(t, e.stop())
	assert.EqualError(t, check.Check(nil), "the webhook server is shutting down")
}

func TestNoReadyFuncMeansReadyOnceServing(t *testing.T) {
	e := startEnv(t, allowAll, func(o *Options) { o.Ready = nil })
	require.Eventually(t, func() bool { return e.srv.ReadyCheck().Check(nil) == nil }, 10*time.Second, time.Millisecond)
}

func TestCertificateRotationReachesNewConnections(t *testing.T) {
	e := startEnv(t, allowAll)
	first := e.cert.Load()
	peer := func() string {
		t.Helper()
		c := e.client() // a new transport: a new connection and handshake
		code, _ := e.do(c, http.MethodPost, "/mutate-pod", "application/json", podReview(t, "u"))
		require.Equal(t, http.StatusOK, code)
		conn, err := tls.Dial("tcp", e.base[len("https://"):], &tls.Config{RootCAs: e.roots, MinVersion: tls.VersionTLS12})
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	// A client with a connection from before the rotation goes on working.
	old := e.client()
	code, _ := e.do(old, http.MethodPost, "/mutate-pod", "application/json", podReview(t, "u"))
	require.Equal(t, http.StatusOK, code)

	assert.Equal(t, first.Leaf.Subject.CommonName, peer())
	e.setCert(selfSigned(t, "webhook-2"))
	assert.Equal(t, "webhook-2", peer(), "the next handshake serves the new certificate")
	code, _ = e.do(old, http.MethodPost, "/mutate-pod", "application/json", podReview(t, "u"))
	assert.Equal(t, http.StatusOK, code)

	// A client that trusts only the first certificate is refused now.
	onlyFirst := x509.NewCertPool()
	onlyFirst.AddCert(first.Leaf)
	strict := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: onlyFirst, MinVersion: tls.VersionTLS12}}}
	_, err := strict.Post(e.base+"/mutate-pod", "application/json", nil)
	assert.ErrorContains(t, err, "certificate signed by unknown authority")
}

func TestTLSBelow12IsRefused(t *testing.T) {
	e := startEnv(t, allowAll)
	_, err := tls.Dial("tcp", e.base[len("https://"):], &tls.Config{RootCAs: e.roots, MaxVersion: tls.VersionTLS11}) //nolint:gosec // the point
	assert.Error(t, err)
}

func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.HandleAdmission(Webhook{Name: "slow", Path: "/slow",
			Admitter: AdmitFunc(func(ctx context.Context, _ *admissionv1.AdmissionRequest) Result {
				close(entered)
				<-release
				if ctx.Err() != nil {
					return Errored(ctx.Err())
				}
				return Allowed()
			})}))
	})
	type answer struct {
		code int
		body []byte
		err  error
	}
	got := make(chan answer, 1)
	body := podReview(t, "in-flight")
	go func() {
		resp, err := e.client().Post(e.base+"/slow", "application/json", bytes.NewReader(body))
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		got <- answer{code: resp.StatusCode, body: data, err: err}
	}()
	<-entered
	e.cancel()
	require.Eventually(t, func() bool { return e.srv.shuttingDown.Load() }, 10*time.Second, time.Millisecond)
	select {
	case err := <-e.done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	a := <-got
	require.NoError(t, a.err)
	assert.Equal(t, http.StatusOK, a.code)
	var ar admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(a.body, &ar))
	require.NotNil(t, ar.Response)
	assert.True(t, ar.Response.Allowed, "the in-flight request's context was not cancelled by the shutdown")
	assert.Equal(t, types.UID("in-flight"), ar.Response.UID)
	require.NoError(t, e.stop())

	_, err := e.client().Post(e.base+"/slow", "application/json", nil)
	assert.Error(t, err, "no new connections after shutdown")
}

func TestShutdownTimeoutBoundsAStuckHandler(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.HandleAdmission(Webhook{Name: "stuck", Path: "/stuck",
			Admitter: AdmitFunc(func(context.Context, *admissionv1.AdmissionRequest) Result {
				close(entered)
				<-release
				return Allowed()
			})}))
	}, func(o *Options) { o.ShutdownTimeout = 50 * time.Millisecond })
	body := podReview(t, "u")
	go func() {
		if resp, err := e.client().Post(e.base+"/stuck", "application/json", bytes.NewReader(body)); err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-entered
	assert.ErrorContains(t, e.stop(), "shutting down the webhook server: context deadline exceeded")
}

func TestHandleMountsRawHandlersAndRecoversTheirPanics(t *testing.T) {
	var calls atomic.Int32
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.Handle("/convert", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				panic("first call fails")
			}
			_, _ = io.WriteString(w, "converted")
		})))
		assert.ErrorContains(t, s.Handle("/convert", http.NotFoundHandler()), `path "/convert" is already registered`)
		assert.ErrorContains(t, s.Handle("/x", nil), `nil handler for "/x"`)
		assert.ErrorContains(t, s.HandleAdmission(Webhook{Name: "c", Path: "/convert",
			Admitter: AdmitFunc(func(context.Context, *admissionv1.AdmissionRequest) Result { return Allowed() })}),
			`path "/convert" is already registered`)
	})
	c := e.client()
	for i, want := range []struct {
		code int
		body string
	}{
		{500, "internal error in the handler of /convert: first call fails\n"},
		{200, "converted"},
	} {
		resp, err := c.Post(e.base+"/convert", "application/json", nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, want.code, resp.StatusCode, "call %d", i)
		assert.Equal(t, want.body, string(body), "call %d", i)
	}
	// An unregistered path is not found.
	resp, err := c.Post(e.base+"/nothing", "application/json", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
