package podprobe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

// serverAddr is the test server's address (tests call the runners
// directly: the guard refuses loopback, see guard_test.go).
func serverAddr(t *testing.T, s *httptest.Server) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s.Listener.Addr().String())
	require.NoError(t, err)
	return ap
}

// A redirect is the answer: its target is never asked.
func TestHTTPRedirectNotFollowed(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	mux.HandleFunc("/target", func(http.ResponseWriter, *http.Request) { followed.Add(1) })
	s := httptest.NewServer(mux)
	defer s.Close()

	out := runHTTP(context.Background(), &corev1.HTTPGetAction{Path: "/redirect"}, serverAddr(t, s), time.Second)
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, out.state, "a 3xx is a success, as the kubelet's")
	assert.Zero(t, followed.Load(), "the redirect was not followed")
}

// Failures say the status code, never the body; headers are sent, and a
// Host header changes only what the server is told.
func TestHTTPStatusAndHeaders(t *testing.T) {
	var gotHeader, gotHost, gotPath atomic.Value
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader.Store(r.Header.Get("X-Probe"))
		gotHost.Store(r.Host)
		gotPath.Store(r.URL.RequestURI())
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("secret-body " + strings.Repeat("x", 100<<10)))
	}))
	defer s.Close()

	get := &corev1.HTTPGetAction{Path: "/healthz?full=1", HTTPHeaders: []corev1.HTTPHeader{
		{Name: "X-Probe", Value: "yes"}, {Name: "Host", Value: "game.example"}}}
	out := runHTTP(context.Background(), get, serverAddr(t, s), time.Second)
	assert.Equal(t, appsv1alpha1.ProbeFailed, out.state)
	assert.Equal(t, "HTTP 503", out.msg)
	assert.Equal(t, "yes", gotHeader.Load())
	assert.Equal(t, "game.example", gotHost.Load())
	assert.Equal(t, "/healthz?full=1", gotPath.Load())
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer s.Close()
	defer close(release)

	out := runHTTP(context.Background(), &corev1.HTTPGetAction{Path: "/"}, serverAddr(t, s), 100*time.Millisecond)
	assert.Equal(t, appsv1alpha1.ProbeFailed, out.state)
	assert.Equal(t, "timed out after 100ms", out.msg)
}

func TestHTTPBadScheme(t *testing.T) {
	out := runHTTP(context.Background(), &corev1.HTTPGetAction{Scheme: "gopher"}, netip.MustParseAddrPort("10.0.0.1:80"), time.Second)
	assert.Equal(t, appsv1alpha1.ProbeFailed, out.state)
	assert.Contains(t, out.msg, "unsupported scheme")
}

func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := netip.MustParseAddrPort(ln.Addr().String())
	out := runTCP(context.Background(), addr, time.Second)
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, out.state)

	require.NoError(t, ln.Close())
	out = runTCP(context.Background(), addr, time.Second)
	assert.Equal(t, appsv1alpha1.ProbeFailed, out.state)
	assert.Equal(t, "connection refused", out.msg)
}

// exec through a CRI runtime (the fake one, over gRPC): the exit code is
// the result, the output never reaches the message.
func TestExecThroughCRI(t *testing.T) {
	fake := critest.NewFakeRuntime()
	sock := filepath.Join(critest.ShortTempDir(t), "cri.sock")
	critest.Serve(t, sock, fake)
	rt, _, err := cri.Connect(context.Background(), "unix://"+sock, 5*time.Second)
	require.NoError(t, err)
	defer func() { _ = rt.Close() }()
	fake.AddContainer(critest.Container{ID: "c1", PodUID: "u1", Name: "main", State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	fake.AddContainer(critest.Container{ID: "c2", PodUID: "u1", Name: "old", State: runtimeapi.ContainerState_CONTAINER_EXITED})
	ctx := context.Background()

	fake.SetExecScript("c1", critest.ExecScript{Stdout: []byte("secret-output"), Stderr: []byte("secret-err"), ExitCode: 3})
	out := runExec(ctx, rt, "c1", []string{"check"}, time.Second)
	assert.Equal(t, outcome{state: appsv1alpha1.ProbeFailed, msg: "exit code 3"}, out)
	calls := fake.ExecCalls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"check"}, calls[0].Cmd)
	assert.Equal(t, int64(1), calls[0].Timeout, "the probe's timeout goes to the runtime")

	fake.SetExecScript("c1", critest.ExecScript{Stdout: []byte("fine")})
	assert.Equal(t, succeeded(), runExec(ctx, rt, "c1", []string{"check"}, time.Second))

	fake.SetExecScript("c1", critest.ExecScript{Err: status.Error(codes.DeadlineExceeded, "timeout 1s exceeded: secret")})
	assert.Equal(t, outcome{state: appsv1alpha1.ProbeFailed, msg: "timed out after 1s"}, runExec(ctx, rt, "c1", []string{"check"}, time.Second))

	out = runExec(ctx, rt, "c2", []string{"check"}, time.Second)
	assert.Equal(t, outcome{state: appsv1alpha1.ProbeFailed, msg: "container not running"}, out)

	fake.SetExecScript("c1", critest.ExecScript{Err: status.Error(codes.Unavailable, "runtime restarting")})
	out = runExec(ctx, rt, "c1", []string{"check"}, time.Second)
	assert.Error(t, out.err, "the probe could not run: no result")

	// The kubelet's labels say whose container it is.
	assert.NoError(t, ownContainer(ctx, rt, "u1", "main", "c1"))
	assert.ErrorIs(t, ownContainer(ctx, rt, "u2", "main", "c1"), errForeignContainer, "another pod's")
	assert.ErrorIs(t, ownContainer(ctx, rt, "u1", "old", "c1"), errForeignContainer, "another container of the pod")
	assert.ErrorIs(t, ownContainer(ctx, rt, "u1", "main", "gone"), errForeignContainer)
}

func TestResolvePort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "side", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9000}}},
		{Name: "main", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
	}}}
	n, err := resolvePort(intstr.FromInt32(81), pod, "main")
	assert.NoError(t, err)
	assert.Equal(t, uint16(81), n)
	n, err = resolvePort(intstr.FromString("http"), pod, "main")
	assert.NoError(t, err)
	assert.Equal(t, uint16(8080), n, "the probed container's port first")
	n, err = resolvePort(intstr.FromString("http"), pod, "other")
	assert.NoError(t, err)
	assert.Equal(t, uint16(9000), n)
	n, err = resolvePort(intstr.FromString("8081"), pod, "main")
	assert.NoError(t, err)
	assert.Equal(t, uint16(8081), n)
	_, err = resolvePort(intstr.FromString("grpc"), pod, "main")
	assert.EqualError(t, err, `port "grpc" is not a port of the pod`)
	_, err = resolvePort(intstr.FromInt32(70000), pod, "main")
	assert.Error(t, err)
}

func TestShorten(t *testing.T) {
	assert.Equal(t, nodeprobe.MaxMessage, maxMessage)
	long := strings.Repeat("é", nodeprobe.MaxMessage)
	s := shorten(long)
	assert.LessOrEqual(t, len(s), nodeprobe.MaxMessage)
	assert.True(t, strings.HasPrefix(long, s))
	assert.Equal(t, "short", shorten("short"))
}
