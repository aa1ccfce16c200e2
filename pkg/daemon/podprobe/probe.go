package podprobe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// Execer runs a command in a container and lists a pod's containers as the
// runtime knows them; cri.Runtime is one.
type Execer interface {
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (cri.ExecResult, error)
	PodContainers(ctx context.Context, podUID string) ([]cri.Container, error)
}

// errForeignContainer: the container the pod's status names is not, for the
// runtime, that container of that pod (a forged or stale status).
var errForeignContainer = errors.New("refused: the container is not the pod's")

// ownContainer checks with the runtime that the container id (bare) is the
// named container of the pod with this UID, by the kubelet's labels: the
// pod's status names the container, and whoever may write a pod's status
// must not be able to point an exec probe at another pod's container.
func ownContainer(ctx context.Context, rt Execer, podUID, name, id string) error {
	cs, err := rt.PodContainers(ctx, podUID)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.ID == id {
			if c.Name == name && c.PodUID == podUID {
				return nil
			}
			break
		}
	}
	return errForeignContainer
}

// Probe kinds, the "type" label of the probes metric.
const (
	kindExec = "exec"
	kindTCP  = "tcp"
	kindHTTP = "http"
	kindGRPC = "grpc"
	kindNone = "none"
)

// outcome is what one run of a probe found. err set means the probe could
// not tell (the runtime failed to answer): it counts for nothing, as the
// kubelet's probe errors.
type outcome struct {
	state appsv1alpha1.ProbeState
	msg   string
	err   error
}

func succeeded() outcome { return outcome{state: appsv1alpha1.ProbeSucceeded} }

func failed(format string, args ...any) outcome {
	return outcome{state: appsv1alpha1.ProbeFailed, msg: shorten(fmt.Sprintf(format, args...))}
}

// maxMessage is nodeprobe.MaxMessage (a test holds them equal): package
// nodeprobe links the SubjectAccessReview client, which the daemon must not
// (cmd/kruise-daemon's dependency test).
const maxMessage = 256

// shorten keeps a message within maxMessage bytes, on a rune boundary.
func shorten(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// kindOf names the probe's handler.
func kindOf(p *corev1.Probe) string {
	switch {
	case p.Exec != nil:
		return kindExec
	case p.TCPSocket != nil:
		return kindTCP
	case p.HTTPGet != nil:
		return kindHTTP
	case p.GRPC != nil:
		return kindGRPC
	}
	return kindNone
}

// runExec runs the command in the container (its bare CRI ID). Success is
// exit code 0; the output is never looked at beyond being dropped.
func runExec(ctx context.Context, rt Execer, containerID string, cmd []string, timeout time.Duration) outcome {
	res, err := rt.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		switch status.Code(err) {
		case codes.DeadlineExceeded:
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return outcome{err: err} // cancelled: the worker stops
			}
			return failed("timed out after %s", timeout)
		case codes.NotFound, codes.FailedPrecondition:
			return failed("container not running")
		}
		return outcome{err: err}
	}
	if res.ExitCode != 0 {
		return failed("exit code %d", res.ExitCode)
	}
	return succeeded()
}

// dialer dials only the address it is given (an IP literal) and no proxy:
// probes never look names up nor leave through HTTP_PROXY.
func dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout}
}

// runTCP opens and closes a connection to addr.
func runTCP(ctx context.Context, addr netip.AddrPort, timeout time.Duration) outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dialer(timeout).DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return netFailure(err, timeout)
	}
	_ = conn.Close()
	return succeeded()
}

// httpTransport is shared by every HTTP probe: no proxy, no keep-alive (each
// probe opens its own connection, as the kubelet's), and TLS not verified
// (the kubelet does not verify probe certificates either).
var httpTransport = &http.Transport{
	Proxy:              nil,
	DisableKeepAlives:  true,
	DisableCompression: true,
	TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's probes
	DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, address)
	},
}

// httpClient follows no redirect: a 3xx is the probe's answer, never a
// second request to wherever it points.
var httpClient = &http.Client{
	Transport: httpTransport,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// bodyDiscard is how much of a response body is read before closing it.
const bodyDiscard = 1 << 10

// runHTTP sends GET scheme://addr/path with the headers. Success is a
// status from 200 to 399.
func runHTTP(ctx context.Context, get *corev1.HTTPGetAction, addr netip.AddrPort, timeout time.Duration) outcome {
	req, err := newRequest(ctx, get, addr)
	if err != nil {
		return failed("%s", err.Error())
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	defer cancel()
	resp, err := httpClient.Do(req.WithContext(ctx))
	if err != nil {
		return netFailure(err, timeout)
	}
	_, _ = io.CopyN(io.Discard, resp.Body, bodyDiscard)
	_ = resp.Body.Close()
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		return succeeded()
	}
	return failed("HTTP %d", resp.StatusCode)
}

// newRequest builds the probe's request. The host is always the pod's IP:
// a Host header changes only what the server is told.
func newRequest(ctx context.Context, get *corev1.HTTPGetAction, addr netip.AddrPort) (*http.Request, error) {
	scheme := strings.ToLower(string(get.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("unsupported scheme %q", get.Scheme)
	}
	u, err := url.Parse(get.Path)
	if err != nil {
		return nil, errors.New("invalid path")
	}
	u.Scheme = scheme
	u.Host = addr.String()
	u.User = nil
	if u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errors.New("invalid request")
	}
	req.Header.Set("User-Agent", "kruise-probe/1.0")
	req.Header.Set("Accept", "*/*")
	for _, h := range get.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}

// netFailure turns a dial or request error into a short reason; the
// error's own text (addresses, TLS details) is left to the logs.
func netFailure(err error, timeout time.Duration) outcome {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return failed("timed out after %s", timeout)
	case errors.Is(err, context.Canceled):
		return outcome{err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return failed("connection refused")
	case errors.Is(err, syscall.ECONNRESET):
		return failed("connection reset")
	case errors.Is(err, syscall.EHOSTUNREACH):
		return failed("host unreachable")
	case errors.Is(err, syscall.ENETUNREACH):
		return failed("network unreachable")
	}
	var tlsErr tls.RecordHeaderError
	if errors.As(err, &tlsErr) {
		return failed("TLS handshake failed")
	}
	return failed("request failed")
}

// resolvePort is the probe's port number. The controller resolves named
// ports; a name that still arrives is looked up in the probed container's
// ports, then the pod's other containers'.
func resolvePort(port intstr.IntOrString, pod *corev1.Pod, container string) (uint16, error) {
	n := 0
	if port.Type == intstr.Int {
		n = int(port.IntVal)
	} else if v, err := strconv.Atoi(port.StrVal); err == nil {
		n = v
	} else {
		n = namedPort(pod, container, port.StrVal)
		if n == 0 {
			return 0, fmt.Errorf("port %q is not a port of the pod", shorten(port.StrVal))
		}
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port %d", n)
	}
	return uint16(n), nil
}

func namedPort(pod *corev1.Pod, container, name string) int {
	var other int
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name != name || p.ContainerPort <= 0 {
				continue
			}
			if c.Name == container {
				return int(p.ContainerPort)
			}
			if other == 0 {
				other = int(p.ContainerPort)
			}
		}
	}
	return other
}
