package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/process/healthz"
)

// DefaultAddr is where the webhooks are served: OpenKruise's port, so that
// its Service and docs apply.
const DefaultAddr = ":9876"

// Timeouts of the HTTP server. The API server waits at most 30 s for a
// webhook (timeoutSeconds is 1 to 30, 10 by default), so an answer later
// than that is never read: reading and writing are bounded a little above it.
// Idle connections are kept longer than the API server's client keeps them
// (90 s, client-go's transport default), so it is the client that closes an
// idle connection, never the server while a request is on its way.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 35 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	// DefaultShutdownTimeout bounds how long Serve waits for in-flight
	// requests once its context ends.
	DefaultShutdownTimeout = 10 * time.Second
	// MaxHandlerTimeout bounds a request's context: the API server's own
	// timeout (the "timeout" query parameter it sends) when shorter.
	MaxHandlerTimeout = 30 * time.Second
)

// Options configures a Server.
type Options struct {
	// Addr is the TCP listen address; empty means DefaultAddr. Port 0 picks
	// a free port (tests).
	Addr string
	// GetCertificate returns the serving certificate; it is called on every
	// TLS handshake, so a rotated certificate is served by the next
	// connection. Required.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Ready reports whether the caller is ready for the API server to call
	// (the certificate manager: a valid certificate, and its CA in the
	// webhook configurations). Nil means always. ReadyCheck fails with its
	// error.
	Ready func() error
	// Metrics is where the admission metrics are registered; nil keeps
	// them unregistered.
	Metrics prometheus.Registerer
	// ShutdownTimeout bounds the graceful shutdown; zero means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// Server serves the webhooks over HTTPS. Build it with New, register
// handlers, then Listen and Serve.
type Server struct {
	opts    Options
	metrics *metrics
	mux     *http.ServeMux

	mu    sync.Mutex
	paths map[string]bool
	names map[string]bool

	listener     net.Listener
	serving      atomic.Bool
	shuttingDown atomic.Bool
}

// New builds a Server. It registers the admission metrics in opts.Metrics.
func New(opts Options) (*Server, error) {
	if opts.GetCertificate == nil {
		return nil, errors.New("webhook server: GetCertificate is required")
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	m := newMetrics()
	if opts.Metrics != nil {
		for _, c := range m.collectors() {
			if err := opts.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("registering webhook metrics: %w", err)
			}
		}
	}
	return &Server{
		opts:    opts,
		metrics: m,
		mux:     http.NewServeMux(),
		paths:   map[string]bool{},
		names:   map[string]bool{},
	}, nil
}

// Handler returns the server's HTTP handler (every registered path), for
// tests and embedding.
func (s *Server) Handler() http.Handler { return s.mux }

// Handle mounts h on path as it is: for review handlers other than
// admission, such as CRD conversion. h must bound the body it reads. A
// panic in h is answered with 500 and logged; the server keeps serving.
func (s *Server) Handle(path string, h http.Handler) error {
	if h == nil {
		return fmt.Errorf("webhook server: nil handler for %q", path)
	}
	if err := s.claim(path, ""); err != nil {
		return err
	}
	s.mux.Handle(path, recoverHandler{path: path, next: h})
	return nil
}

// claim reserves a path (exactly, no subtree) and a webhook name.
func (s *Server) claim(path, name string) error {
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.ContainsAny(path, " {}") {
		return fmt.Errorf("webhook server: path %q must start with /, not end with / and name one endpoint", path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paths[path] {
		return fmt.Errorf("webhook server: path %q is already registered", path)
	}
	if name != "" && s.names[name] {
		return fmt.Errorf("webhook server: a webhook named %q is already registered", name)
	}
	s.paths[path] = true
	if name != "" {
		s.names[name] = true
	}
	return nil
}

// Listen binds the address, so that a port conflict is reported at
// start-up. It returns the bound address.
func (s *Server) Listen() (net.Addr, error) {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening for webhooks on %q: %w", s.opts.Addr, err)
	}
	s.listener = ln
	return ln.Addr(), nil
}

// Serve serves HTTPS on the listener from Listen until ctx ends, then fails
// ReadyCheck and shuts down gracefully: in-flight requests finish (their
// contexts are not cancelled by ctx) within the shutdown timeout. It
// returns nil after a clean shutdown. Serve may be called once.
func (s *Server) Serve(ctx context.Context) error {
	if s.listener == nil {
		return errors.New("webhook server: Serve called before Listen")
	}
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("webhook server: Serve called twice")
	}
	logger := klog.FromContext(ctx)
	base := context.WithoutCancel(ctx)
	srv := &http.Server{
		Handler: s.mux,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.opts.GetCertificate,
		},
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          log.New(errorLogWriter{logger: logger}, "", 0),
	}
	errCh := make(chan error, 1)
	go func() { errCh <- srv.ServeTLS(s.listener, "", "") }()
	logger.Info("Serving webhooks", "addr", s.listener.Addr().String())

	select {
	case err := <-errCh:
		s.shuttingDown.Store(true)
		return fmt.Errorf("serving webhooks on %s: %w", s.listener.Addr(), err)
	case <-ctx.Done():
	}
	s.shuttingDown.Store(true)
	shutdownCtx, cancel := context.WithTimeout(base, s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down the webhook server: %w", err)
	}
	if err := <-errCh; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving webhooks: %w", err)
	}
	logger.V(2).Info("Webhook server stopped")
	return nil
}

// ReadyCheck is the server's readiness as a /readyz check named "webhook":
// it fails until Serve has started, once the server shuts down, and while
// Options.Ready fails.
func (s *Server) ReadyCheck() healthz.Checker {
	return healthz.NewCheck("webhook", func(*http.Request) error {
		switch {
		case s.shuttingDown.Load():
			return errors.New("the webhook server is shutting down")
		case !s.serving.Load():
			return errors.New("the webhook server is not serving yet")
		}
		if s.opts.Ready != nil {
			if err := s.opts.Ready(); err != nil {
				return fmt.Errorf("webhook certificate: %w", err)
			}
		}
		return nil
	})
}

// errorLogWriter sends the HTTP server's own error lines (failed TLS
// handshakes, mostly) to the structured log. A handshake failure names what
// the client refused ("bad certificate", "unknown certificate authority"):
// the first thing to look at when the API server's caBundle is not ours. A
// connection closed before any handshake (a TCP probe) is logged at V(4).
type errorLogWriter struct{ logger klog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.HasSuffix(msg, ": EOF") {
		w.logger.V(4).Info("Webhook server connection error", "error", msg)
	} else {
		w.logger.Info("Webhook server connection error", "error", msg)
	}
	return len(p), nil
}

// recoverHandler answers a panic of next with 500 rather than net/http's
// dropped connection.
type recoverHandler struct {
	path string
	next http.Handler
}

func (h recoverHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			klog.FromContext(r.Context()).Error(fmt.Errorf("panic: %v", v), "Webhook handler panicked", "path", h.path, "stack", stack())
			http.Error(w, fmt.Sprintf("internal error in the handler of %s: %v", h.path, v), http.StatusInternalServerError)
		}
	}()
	h.next.ServeHTTP(w, r)
}
