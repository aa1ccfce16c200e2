package healthz

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
)

type detailed struct{ Checker }

func (detailed) Detail() string { return "containerd 1.7.0" }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestHealthEndpoints(t *testing.T) {
	synced := NewFlag("informer-sync", "node informer has not synced")
	s := New(Options{
		Healthz: []Checker{Ping},
		Readyz:  []Checker{detailed{NewCheck("cri", func(*http.Request) error { return nil })}, synced},
	})
	h := s.Handler()

	code, body := get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	code, body = get(t, h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "[-]informer-sync failed: node informer has not synced")
	assert.Contains(t, body, "[+]cri ok (containerd 1.7.0)")

	synced.Set(true)
	code, body = get(t, h, "/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	code, body = get(t, h, "/readyz?verbose")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "[+]cri ok (containerd 1.7.0)\n[+]informer-sync ok\nreadyz check passed")

	code, _ = get(t, h, "/metrics")
	assert.Equal(t, http.StatusNotFound, code, "no gatherer, no /metrics")
}

func TestServeMetricsAndGracefulShutdown(t *testing.T) {
	reg := NewRegistry()
	own := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kruise_test_own_gauge", Help: "test"})
	own.Set(7)
	reg.MustRegister(own)
	// The provider is process-wide: a fresh queue name keeps -count=N honest.
	queueName := fmt.Sprintf("test_queue_%d", time.Now().UnixNano())
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: queueName})
	defer q.ShutDown()
	q.Add("a")

	s := New(Options{Addr: "127.0.0.1:0", Gatherer: Gatherers(reg), Healthz: []Checker{Ping}, Readyz: []Checker{Ping}})
	addr, err := s.Listen()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()

	base := "http://" + addr.String()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `workqueue_adds_total{name="`+queueName+`"} 1`)
	assert.Contains(t, string(body), "go_goroutines")
	assert.Contains(t, string(body), "kruise_test_own_gauge 7")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "server must be closed")
}

func TestReadyzFailsDuringShutdown(t *testing.T) {
	s := New(Options{Readyz: []Checker{Ping}})
	s.shuttingDown.Store(true)
	code, body := get(t, s.Handler(), "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.True(t, strings.HasPrefix(body, "[-]shutdown failed"), body)
	code, _ = get(t, s.Handler(), "/healthz")
	assert.Equal(t, http.StatusOK, code, "liveness is unaffected by shutdown")
}

func TestListenConflictIsReported(t *testing.T) {
	a := New(Options{Addr: "127.0.0.1:0"})
	addr, err := a.Listen()
	require.NoError(t, err)
	defer a.listener.Close()

	b := New(Options{Addr: addr.String()})
	_, err = b.Listen()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "listening for health and metrics on")

	assert.Error(t, New(Options{}).Serve(context.Background()), "Serve before Listen")
}
