// Package healthz is the HTTP endpoint both kruise binaries expose for the
// kubelet's probes and for Prometheus: /healthz, /readyz and /metrics.
package healthz

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// DefaultShutdownTimeout bounds how long Serve waits for in-flight requests.
const DefaultShutdownTimeout = 5 * time.Second

// Options configures a Server.
type Options struct {
	// Addr is the listen address: a TCP host:port (":10222"; port 0 picks a
	// free port) or a unix socket, "unix:///abs/path" or "unix:/abs/path".
	// A unix socket left by an earlier run is replaced, one in use is an
	// error; the socket gets mode SocketMode and is removed on shutdown.
	Addr string
	// Gatherer backs /metrics. Nil serves no /metrics endpoint.
	Gatherer prometheus.Gatherer
	// Healthz are the liveness checks (/healthz); a failure gets the
	// container restarted, so keep them to "the process can make progress".
	Healthz []Checker
	// Readyz are the readiness checks (/readyz).
	Readyz []Checker
	// ShutdownTimeout bounds the graceful shutdown; zero means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// Server serves health and metrics endpoints.
type Server struct {
	opts         Options
	handler      http.Handler
	shuttingDown atomic.Bool
	listener     net.Listener
}

// New builds a Server; call Listen, then Serve.
func New(opts Options) *Server {
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	s := &Server{opts: opts}
	mux := http.NewServeMux()
	mux.Handle("/healthz", &healthHandler{endpoint: "healthz", checks: opts.Healthz})
	mux.Handle("/readyz", &healthHandler{endpoint: "readyz", checks: opts.Readyz, shuttingDown: &s.shuttingDown})
	if opts.Gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
			ErrorHandling: promhttp.ContinueOnError,
		}))
	}
	s.handler = mux
	return s
}

// Handler returns the HTTP handler, for tests and for embedding.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the address, so that a port conflict is reported at start-up
// rather than from a background goroutine. It returns the bound address.
func (s *Server) Listen() (net.Addr, error) {
	ln, err := listen(s.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening for health and metrics on %q: %w", s.opts.Addr, err)
	}
	s.listener = ln
	return ln.Addr(), nil
}

// Serve serves on the listener from Listen until ctx is cancelled, then fails
// /readyz and shuts down gracefully within the shutdown timeout. It returns nil
// after a clean shutdown.
func (s *Server) Serve(ctx context.Context) error {
	if s.listener == nil {
		return errors.New("server: Serve called before Listen")
	}
	logger := klog.FromContext(ctx)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
	}
	errCh := make(chan error, 1)
	go func() { errCh <- srv.Serve(s.listener) }()
	logger.Info("Serving health and metrics", "addr", s.listener.Addr().String())

	select {
	case err := <-errCh:
		return fmt.Errorf("serving health and metrics on %s: %w", s.listener.Addr(), err)
	case <-ctx.Done():
	}
	s.shuttingDown.Store(true)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down health and metrics server: %w", err)
	}
	if err := <-errCh; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving health and metrics: %w", err)
	}
	logger.V(2).Info("Health and metrics server stopped")
	return nil
}
