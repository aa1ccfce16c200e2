// Package crrexec carries out ContainerRecreateRequests on the daemon's node.
package crrexec

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

// ExecSyncer is the one runtime call a preStop hook needs.
type ExecSyncer interface {
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (cri.ExecResult, error)
}

// HookKind says which handler of a preStop hook ran.
type HookKind string

const (
	HookNone      HookKind = ""
	HookExec      HookKind = "exec"
	HookHTTPGet   HookKind = "httpGet"
	HookSleep     HookKind = "sleep"
	HookTCPSocket HookKind = "tcpSocket"
)

var (
	// ErrHookNotSupported marks a tcpSocket hook: the API keeps the field for
	// compatibility but the kubelet never runs it, so neither do we; the
	// caller reports it (an Event) and goes on to stop the container.
	ErrHookNotSupported = errors.New("tcpSocket preStop hooks are not run (the kubelet does not run them either)")
	// ErrGraceExceeded marks a hook cut short because the grace period ran
	// out; the caller stops the container anyway.
	ErrGraceExceeded = errors.New("grace period ended before the preStop hook finished")
)

// PreStop is one preStop hook to run.
type PreStop struct {
	Handler     *corev1.LifecycleHandler
	ContainerID string // bare CRI ID
	// PodIP is the default host of httpGet hooks. For a hostNetwork pod it
	// is the node's IP, which is where the container listens.
	PodIP       string
	HostNetwork bool
	// Ports are the container's ports, to resolve a named httpGet port.
	Ports []corev1.ContainerPort
	// Deadline is the end of the grace period: no hook runs past it.
	Deadline time.Time
}

// Result says what ran, for how long, and how it ended. Err is nil on
// success; either way the caller goes on to stop the container.
type Result struct {
	Kind     HookKind
	Duration time.Duration
	Err      error
}

// Runner runs preStop hooks the way the kubelet does.
type Runner struct {
	exec   ExecSyncer
	clock  clock.Clock
	client *http.Client
	// hostOverride replaces the pod IP as default httpGet host (tests).
	hostOverride string
}

// Option tunes a Runner.
type Option func(*Runner)

// WithClock sets the clock used for the remaining grace and sleep hooks.
func WithClock(c clock.Clock) Option { return func(r *Runner) { r.clock = c } }

// WithHTTPHost makes httpGet hooks without a host go to host instead of the
// pod IP, e.g. 127.0.0.1 for tests whose servers listen on loopback.
func WithHTTPHost(host string) Option { return func(r *Runner) { r.hostOverride = host } }

// maxHTTPRedirects matches the kubelet (and net/http's default).
const maxHTTPRedirects = 10

// maxHTTPBody bounds how much of a response body is drained so the
// connection could be reused; the body is never looked at.
const maxHTTPBody = 10 << 10

// execSlack lets the runtime's own ExecSync timeout fire (and kill the
// command) before we give up on the call ourselves.
const execSlack = 2 * time.Second

// NewRunner returns a Runner running exec hooks through exec.
func NewRunner(exec ExecSyncer, opts ...Option) *Runner {
	r := &Runner{
		exec:  exec,
		clock: clock.RealClock{},
		client: &http.Client{
			Transport: &http.Transport{
				// As the kubelet: hooks target the pod itself, whose
				// certificate nobody can verify from the node.
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet behaviour
				// Never through a proxy from the daemon's environment.
				Proxy: nil,
				// Hooks are rare one-offs to ever-changing pod IPs.
				DisableKeepAlives: true,
			},
			CheckRedirect: sameHostRedirects,
		},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// sameHostRedirects follows redirects to the same host only, as the
// kubelet's lifecycle client does (probe/http RedirectChecker(false)): a
// redirect elsewhere is not followed and the 3xx itself is the answer.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxHTTPRedirects {
		return fmt.Errorf("stopped after %d redirects", maxHTTPRedirects)
	}
	return nil
}

// Run runs the hook and reports how it went. It returns as soon as ctx is
// cancelled (a cancelled CRR stops waiting at once).
func (r *Runner) Run(ctx context.Context, p PreStop) Result {
	start := r.clock.Now()
	kind, err := r.run(ctx, p)
	res := Result{Kind: kind, Duration: r.clock.Since(start), Err: err}
	logger := klog.FromContext(ctx)
	if err != nil {
		logger.V(2).Info("PreStop hook failed", "containerID", p.ContainerID, "hook", kind, "duration", res.Duration, "err", err)
	} else if kind != HookNone {
		logger.V(2).Info("PreStop hook done", "containerID", p.ContainerID, "hook", kind, "duration", res.Duration)
	}
	return res
}

func (r *Runner) run(ctx context.Context, p PreStop) (HookKind, error) {
	h := p.Handler
	switch {
	case h == nil:
		return HookNone, nil
	case h.Exec != nil:
		return HookExec, r.runExec(ctx, p)
	case h.HTTPGet != nil:
		return HookHTTPGet, r.runHTTPGet(ctx, p)
	case h.Sleep != nil:
		return HookSleep, r.runSleep(ctx, p)
	case h.TCPSocket != nil:
		return HookTCPSocket, ErrHookNotSupported
	default:
		return HookNone, nil
	}
}

// remaining is the grace left, or an error when there is none: a hook
// started with no grace could only be killed.
func (r *Runner) remaining(ctx context.Context, p PreStop) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	left := p.Deadline.Sub(r.clock.Now())
	if left <= 0 {
		return 0, ErrGraceExceeded
	}
	return left, nil
}

// classify turns a hook error into ErrGraceExceeded when the grace period
// is what ended it, keeping the cause; a cancelled ctx wins.
func (r *Runner) classify(ctx context.Context, p PreStop, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("preStop hook cancelled: %w", errors.Join(ctx.Err(), err))
	}
	// The runtime's own ExecSync timeout comes back as a gRPC
	// DeadlineExceeded status rather than context.DeadlineExceeded.
	if !r.clock.Now().Before(p.Deadline) || errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("%w: %w", ErrGraceExceeded, err)
	}
	return err
}

func (r *Runner) runExec(ctx context.Context, p PreStop) error {
	left, err := r.remaining(ctx, p)
	if err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, left+execSlack)
	defer cancel()
	cmd := p.Handler.Exec.Command
	res, err := r.exec.ExecSync(callCtx, p.ContainerID, cmd, left)
	if err != nil {
		return r.classify(ctx, p, fmt.Errorf("exec preStop hook: %w", err))
	}
	if res.ExitCode != 0 {
		// What the hook printed stays out of the error, which reaches Events
		// that whoever may read the CRR or the pod's Events can see: it may
		// print what the container holds (a token, say). Its exit code
		// says that it failed; the container's own logs say why.
		return fmt.Errorf("exec preStop hook exited with code %d", res.ExitCode)
	}
	return nil
}

func (r *Runner) runSleep(ctx context.Context, p PreStop) error {
	want := durations.Seconds(p.Handler.Sleep.Seconds) // clamped: no wrap-around
	if want <= 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	left := p.Deadline.Sub(r.clock.Now())
	wait := min(want, max(left, 0))
	timer := r.clock.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("preStop sleep hook cancelled: %w", ctx.Err())
	case <-timer.C():
	}
	if wait < want {
		return fmt.Errorf("%w: slept %s of %s", ErrGraceExceeded, wait, want)
	}
	return nil
}

func (r *Runner) runHTTPGet(ctx context.Context, p PreStop) error {
	left, err := r.remaining(ctx, p)
	if err != nil {
		return err
	}
	req, err := r.httpRequest(p)
	if err != nil {
		return fmt.Errorf("httpGet preStop hook: %w", err)
	}
	reqCtx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	req = req.WithContext(reqCtx)
	resp, err := r.client.Do(req)
	if errors.Is(err, http.ErrSchemeMismatch) {
		// As the kubelet: an HTTPS hook answered in plain HTTP is retried
		// over HTTP, without credentials meant for TLS.
		klog.FromContext(ctx).V(1).Info("HTTPS preStop hook got an HTTP answer, retrying over HTTP", "containerID", p.ContainerID, "host", req.URL.Host)
		retry := req.Clone(reqCtx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		resp, err = r.client.Do(retry)
	}
	if err != nil {
		return r.classify(ctx, p, fmt.Errorf("httpGet preStop hook %s: %w", shownURL(req.URL), bareError(err)))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHTTPBody))
	// The kubelet ignores the status code of lifecycle hooks; we report an
	// error status so that a failing hook is visible in the CRR's Events.
	// The container is stopped either way.
	if resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("httpGet preStop hook %s answered %s", shownURL(req.URL), resp.Status)
	}
	return nil
}

// shownURL is the hook's URL as errors (and so Events) show it: scheme,
// host and path, without user info or query, which may carry credentials.
func shownURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// bareError drops the URL net/http puts in front of a request's error: it
// is the full URL, query included.
func bareError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// httpRequest builds the GET the kubelet would send for the hook.
func (r *Runner) httpRequest(p PreStop) (*http.Request, error) {
	g := p.Handler.HTTPGet
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = p.PodIP
		if r.hostOverride != "" {
			host = r.hostOverride
		}
	}
	if host == "" {
		return nil, fmt.Errorf("no host: the hook names none and the pod has no IP yet (hostNetwork=%t)", p.HostNetwork)
	}
	port, err := resolvePort(g.Port, p.Ports)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		// Like the kubelet: a path that does not parse is sent as is.
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", "kruise-daemon/prestop")
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	} else if req.Header.Get("Accept") == "" {
		// An explicitly empty Accept header means "send none".
		req.Header.Del("Accept")
	}
	// A Host header is how a hook picks a virtual host.
	req.Host = req.Header.Get("Host")
	return req, nil
}

// resolvePort turns a numeric or named port into a number. A name is looked
// up in the container's ports first, then read as a number, as the kubelet does.
func resolvePort(port intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	n := -1
	switch port.Type {
	case intstr.Int:
		n = port.IntValue()
	case intstr.String:
		found := false
		for _, cp := range ports {
			if cp.Name == port.StrVal {
				n, found = int(cp.ContainerPort), true
				break
			}
		}
		if !found {
			v, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return 0, fmt.Errorf("port %q is not among the container's ports %s", port.StrVal, portNames(ports))
			}
			n = v
		}
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number %d", n)
	}
	return n, nil
}

func portNames(ports []corev1.ContainerPort) string {
	names := make([]string, 0, len(ports))
	for _, p := range ports {
		if p.Name != "" {
			names = append(names, fmt.Sprintf("%s=%d", p.Name, p.ContainerPort))
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}
