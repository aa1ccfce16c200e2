package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// served is a serving certificate and the CA bundle the configured objects
// must carry for the API server to trust it.
type served struct {
	cert          *tls.Certificate
	leaf          *x509.Certificate
	intermediates *x509.CertPool
	// bundle is ca-cert.pem (ModeManaged) or ca.crt (ModeExternal).
	bundle []byte
	// renewAt is when the Secret is due for renewal (ModeManaged only).
	renewAt time.Time
}

// Status is what the last check found.
type Status struct {
	Mode Mode
	// Synced: at least one check has completed.
	Synced bool
	// Ready is Check's answer at the time of the last check.
	Ready bool
	// Problems found by the last check, and those of objects it could not
	// read, carried over from the check before.
	Problems []Problem
	// NotAfter is the end of the serving certificate's validity; zero when
	// there is none.
	NotAfter time.Time
}

// Manager keeps the webhook server's certificate and the caBundles; see the
// package documentation. Its methods are safe for concurrent use; Run is
// called once.
type Manager struct {
	cfg      Config
	dnsNames []string
	host     string
	clock    clock.WithTicker
	recorder record.EventRecorder
	current  atomic.Pointer[served]
	// started is when New ran: a CRD reset (ConversionResetAnnotation)
	// later than that is left alone.
	started time.Time
	poke    chan struct{}

	// Used by the checks only, which run one at a time (Run's goroutine).
	reported map[string]Problem
	lastOK   map[string]time.Time
	patches  patchHistory

	mu     sync.Mutex
	status Status
	// unverified: the check under way loaded a new serving certificate and
	// has not yet checked the caBundles against it; status is about the
	// previous one.
	unverified bool
}

// New builds a Manager from cfg. It does not call the API server.
func New(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Manager{
		cfg:      cfg,
		dnsNames: DNSNames(cfg.ServiceName, cfg.Namespace),
		host:     ServiceHost(cfg.ServiceName, cfg.Namespace),
		clock:    cfg.Clock,
		started:  cfg.Clock.Now(),
		recorder: cfg.Recorder,
		poke:     make(chan struct{}, 1),
		reported: map[string]Problem{},
		lastOK:   map[string]time.Time{},
		patches:  patchHistory{},
		status:   Status{Mode: cfg.Mode},
	}, nil
}

// GetCertificate is tls.Config's GetCertificate: it returns the newest
// serving certificate, so a renewal takes effect at the next handshake.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s := m.current.Load()
	if s == nil {
		return nil, errors.New("no webhook serving certificate loaded yet")
	}
	return s.cert, nil
}

// CABundle returns the PEM CA bundle that trusts the current serving
// certificate (ca-cert.pem or ca.crt), nil before one is loaded.
func (m *Manager) CABundle() []byte {
	if s := m.current.Load(); s != nil {
		return s.bundle
	}
	return nil
}

// Name names the readiness check.
func (m *Manager) Name() string { return "webhook-certificates" }

// Check is the /readyz check: nil only while the Manager holds a serving
// certificate valid now and the last check found every configured object's
// caBundle trusting it. The error names each object at fault and why.
func (m *Manager) Check(*http.Request) error {
	m.mu.Lock()
	st, unverified := m.status, m.unverified
	m.mu.Unlock()
	if !st.Synced {
		return errors.New("webhook certificates not checked yet")
	}
	var msgs []string
	if unverified {
		msgs = append(msgs, "a new serving certificate was loaded and the caBundles are being checked against it")
	}
	if err := m.validNow(); err != nil {
		msgs = append(msgs, err.Error())
	}
	for _, p := range st.Problems {
		if !p.Transient {
			msgs = append(msgs, p.String())
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// Status returns what the last check found.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.status
	st.Problems = append([]Problem(nil), st.Problems...)
	return st
}

// validNow says why the held certificate cannot be served now, if so.
func (m *Manager) validNow() error {
	s := m.current.Load()
	if s == nil {
		return errors.New("no serving certificate loaded")
	}
	now := m.clock.Now()
	if !now.Before(s.leaf.NotAfter) {
		return fmt.Errorf("the serving certificate expired at %s", s.leaf.NotAfter.Format(time.RFC3339))
	}
	if m.cfg.Mode == ModeExternal && now.Before(s.leaf.NotBefore) {
		return fmt.Errorf("the serving certificate is not valid before %s", s.leaf.NotBefore.Format(time.RFC3339))
	}
	return nil
}

// install makes s the served certificate when it differs from the current.
func (m *Manager) install(ctx context.Context, s *served) {
	old := m.current.Load()
	if old != nil && string(old.leaf.Raw) == string(s.leaf.Raw) && string(old.bundle) == string(s.bundle) {
		// Keep the renewal time of this check (the CA's may differ).
		if !old.renewAt.Equal(s.renewAt) {
			m.current.Store(s)
		}
		return
	}
	m.current.Store(s)
	m.mu.Lock()
	m.unverified = true
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Webhook serving certificate loaded",
		"serial", s.leaf.SerialNumber.Text(16), "issuer", s.leaf.Issuer.CommonName,
		"dnsNames", s.leaf.DNSNames, "notBefore", s.leaf.NotBefore, "notAfter", s.leaf.NotAfter)
}

// check is one pass over the Secret and the configured objects.
type check struct {
	now      time.Time
	problems []Problem
	// seen holds the objects read, by refKey; checked those whose verdict
	// is fresh (read, and patched when needed).
	seen    map[string]corev1.ObjectReference
	checked map[string]bool
	// due is the earliest time something falls due (a renewal, a deferred
	// restore); zero when nothing does.
	due time.Time
	// apiErrors counts failed API calls: the next check comes sooner.
	apiErrors int
}

func (c *check) add(p Problem) {
	c.problems = append(c.problems, p)
	c.checked[refKey(p.Object)] = true
}

func (c *check) ok(ref corev1.ObjectReference) {
	c.seen[refKey(ref)] = ref
	c.checked[refKey(ref)] = true
}

func (c *check) dueAt(t time.Time) {
	if c.due.IsZero() || t.Before(c.due) {
		c.due = t
	}
}

// apiError records a failed API call on ref. It does not make the Manager
// unready while ref was found fine less than a resync period ago: a short
// API server hiccup must not take every webhook replica out of service.
func (m *Manager) apiError(c *check, ref corev1.ObjectReference, format string, args ...any) {
	c.apiErrors++
	last, ok := m.lastOK[refKey(ref)]
	c.problems = append(c.problems, Problem{
		Object:    ref,
		Reason:    ReasonAPIError,
		Message:   fmt.Sprintf(format, args...),
		Transient: ok && c.now.Sub(last) < m.cfg.Resync,
	})
}

// sync checks (and in ModeManaged repairs) the Secret and every configured
// object once. It returns when the next check is due at the latest, and
// whether an API call failed (Run then checks again sooner).
func (m *Manager) sync(ctx context.Context) (time.Duration, bool) {
	c := &check{now: m.clock.Now(), seen: map[string]corev1.ObjectReference{}, checked: map[string]bool{}}
	var s *served
	if m.cfg.Mode == ModeManaged {
		s = m.syncManagedSecret(ctx, c)
	} else {
		s = m.syncExternalSecret(ctx, c)
	}
	if s != nil {
		m.install(ctx, s)
		m.syncTargets(ctx, s, c)
	}
	// An object this check could not read keeps the problems found before.
	m.mu.Lock()
	previous := m.status.Problems
	m.mu.Unlock()
	for _, p := range previous {
		if !p.Transient && p.Reason != ReasonAPIError && !c.checked[refKey(p.Object)] {
			c.problems = append(c.problems, p)
		}
	}
	failing := map[string]bool{}
	for _, p := range c.problems {
		failing[refKey(p.Object)] = true
	}
	for key := range c.seen {
		if !failing[key] {
			m.lastOK[key] = c.now
		}
	}
	m.report(ctx, c.problems, c.seen)

	st := Status{Mode: m.cfg.Mode, Synced: true, Problems: c.problems}
	if cur := m.current.Load(); cur != nil {
		st.NotAfter = cur.leaf.NotAfter
	}
	m.mu.Lock()
	m.status = st
	m.unverified = false
	m.mu.Unlock()
	st.Ready = m.Check(nil) == nil
	m.mu.Lock()
	m.status.Ready = st.Ready
	m.mu.Unlock()

	next := m.cfg.Resync
	if !c.due.IsZero() {
		next = min(next, max(c.due.Sub(c.now), 0))
	}
	if m.cfg.Mode == ModeExternal && s != nil {
		// Readiness ends with the certificate: look again then.
		next = min(next, max(s.leaf.NotAfter.Sub(c.now), 0))
	}
	klog.FromContext(ctx).V(4).Info("Webhook certificates checked", "ready", st.Ready, "problems", len(c.problems), "next", next)
	return next, c.apiErrors > 0
}
