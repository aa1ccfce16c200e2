package healthz

import (
	"bytes"
	"fmt"
	"net/http"
	"sync/atomic"
)

// Checker is one named health condition. Its method set matches client-go's
// leaderelection.HealthzAdaptor, so that adaptor is a Checker as it is.
type Checker interface {
	Name() string
	Check(req *http.Request) error
}

// Detailer is an optional extension of Checker: a passing check that also
// implements it adds the detail to verbose output (e.g. "containerd 1.7.0").
type Detailer interface {
	Detail() string
}

type namedCheck struct {
	name string
	fn   func(*http.Request) error
}

func (c namedCheck) Name() string                  { return c.name }
func (c namedCheck) Check(req *http.Request) error { return c.fn(req) }

// NewCheck wraps fn as a Checker called name.
func NewCheck(name string, fn func(*http.Request) error) Checker {
	return namedCheck{name: name, fn: fn}
}

// Ping is a check that always passes: the process is alive and serving HTTP.
var Ping = NewCheck("ping", func(*http.Request) error { return nil })

// Flag is a check that passes once Set(true) has been called and fails with
// Reason until then. It is safe for concurrent use.
type Flag struct {
	name   string
	reason string
	ok     atomic.Bool
}

// NewFlag returns a Flag that is not set; Check fails with reason until it is.
func NewFlag(name, reason string) *Flag {
	return &Flag{name: name, reason: reason}
}

// Name implements Checker.
func (f *Flag) Name() string { return f.name }

// Set records whether the condition holds.
func (f *Flag) Set(ok bool) { f.ok.Store(ok) }

// IsSet reports the recorded condition.
func (f *Flag) IsSet() bool { return f.ok.Load() }

// Check implements Checker.
func (f *Flag) Check(*http.Request) error {
	if f.ok.Load() {
		return nil
	}
	return fmt.Errorf("%s", f.reason)
}

// healthHandler serves one health endpoint in the style of the Kubernetes
// components: "ok" with 200 when every check passes, 503 with the failing
// checks otherwise; ?verbose lists every check.
type healthHandler struct {
	endpoint string
	checks   []Checker
	// shuttingDown, when set, fails the endpoint before any check runs.
	shuttingDown *atomic.Bool
}

func (h *healthHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var out bytes.Buffer
	failed := false
	if h.shuttingDown != nil && h.shuttingDown.Load() {
		failed = true
		fmt.Fprintf(&out, "[-]shutdown failed: the process is shutting down\n")
	}
	for _, c := range h.checks {
		if err := c.Check(req); err != nil {
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: %v\n", c.Name(), err)
			continue
		}
		detail := ""
		if d, ok := c.(Detailer); ok {
			if s := d.Detail(); s != "" {
				detail = " (" + s + ")"
			}
		}
		fmt.Fprintf(&out, "[+]%s ok%s\n", c.Name(), detail)
	}

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, verbose := req.URL.Query()["verbose"]
	switch {
	case failed:
		w.WriteHeader(http.StatusServiceUnavailable)
		out.WriteString(h.endpoint + " check failed\n")
		_, _ = w.Write(out.Bytes())
	case verbose:
		out.WriteString(h.endpoint + " check passed\n")
		_, _ = w.Write(out.Bytes())
	default:
		_, _ = w.Write([]byte("ok"))
	}
}
