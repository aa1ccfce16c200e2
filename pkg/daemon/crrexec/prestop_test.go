package crrexec

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// fakeExec answers ExecSync with fn and records the calls.
type fakeExec struct {
	mu    sync.Mutex
	calls []execCall
	fn    func(ctx context.Context) (cri.ExecResult, error)
}

type execCall struct {
	id      string
	cmd     []string
	timeout time.Duration
}

func (f *fakeExec) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (cri.ExecResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, execCall{id: id, cmd: cmd, timeout: timeout})
	f.mu.Unlock()
	if f.fn == nil {
		return cri.ExecResult{}, nil
	}
	return f.fn(ctx)
}

func (f *fakeExec) recorded() []execCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]execCall(nil), f.calls...)
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func execHook(cmd ...string) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
}

func TestExecHook(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // from the fake now
		fn       func(ctx context.Context) (cri.ExecResult, error)
		wantErr  string
		notIn    []string
		wantIs   error
		noCall   bool
	}{
		{name: "success", deadline: 10 * time.Second},
		// What the hook printed never reaches the error (and so no Event):
		// it may print what the container holds.
		{name: "non-zero exit", deadline: 10 * time.Second,
			fn: func(context.Context) (cri.ExecResult, error) {
				return cri.ExecResult{ExitCode: 2, Stdout: []byte("token=s3cr3t"), Stderr: []byte("secret-in-stderr\n")}, nil
			},
			wantErr: `exec preStop hook exited with code 2`, notIn: []string{"s3cr3t", "secret-in-stderr", "/quit"}},
		{name: "runtime error", deadline: 10 * time.Second,
			fn: func(context.Context) (cri.ExecResult, error) {
				return cri.ExecResult{}, status.Error(codes.Unavailable, "containerd restarting")
			},
			wantErr: "containerd restarting"},
		{name: "runtime timeout", deadline: 10 * time.Second,
			fn: func(context.Context) (cri.ExecResult, error) {
				return cri.ExecResult{}, status.Error(codes.DeadlineExceeded, "timeout 10s exceeded")
			},
			wantIs: ErrGraceExceeded},
		{name: "no grace left", deadline: -time.Second, wantIs: ErrGraceExceeded, noCall: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clocktesting.NewFakeClock(t0)
			ex := &fakeExec{fn: tc.fn}
			r := NewRunner(ex, WithClock(fc))
			res := r.Run(context.Background(), PreStop{
				Handler: execHook("/quit"), ContainerID: "c1", Deadline: t0.Add(tc.deadline),
			})
			assert.Equal(t, HookExec, res.Kind)
			calls := ex.recorded()
			if tc.noCall {
				assert.Empty(t, calls)
			} else {
				require.Len(t, calls, 1)
				assert.Equal(t, execCall{id: "c1", cmd: []string{"/quit"}, timeout: tc.deadline}, calls[0], "timeout is the remaining grace")
			}
			switch {
			case tc.wantIs != nil:
				assert.ErrorIs(t, res.Err, tc.wantIs)
			case tc.wantErr != "":
				require.Error(t, res.Err)
				assert.Contains(t, res.Err.Error(), tc.wantErr)
				for _, s := range tc.notIn {
					assert.NotContains(t, res.Err.Error(), s)
				}
			default:
				assert.NoError(t, res.Err)
			}
		})
	}
}

func TestExecHookCancelled(t *testing.T) {
	started := make(chan struct{})
	ex := &fakeExec{fn: func(ctx context.Context) (cri.ExecResult, error) {
		close(started)
		<-ctx.Done()
		return cri.ExecResult{}, status.FromContextError(ctx.Err()).Err()
	}}
	r := NewRunner(ex)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		done <- r.Run(ctx, PreStop{Handler: execHook("sleep", "3600"), ContainerID: "c1", Deadline: time.Now().Add(time.Hour)})
	}()
	<-started
	cancel()
	res := <-done
	assert.ErrorIs(t, res.Err, context.Canceled)
	assert.NotErrorIs(t, res.Err, ErrGraceExceeded)
}

// hookServer records what reached it.
type hookServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *hookServer) seen() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func newHookServer(t *testing.T, tls bool, h http.HandlerFunc) *hookServer {
	t.Helper()
	s := &hookServer{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	})
	if tls {
		s.Server = httptest.NewTLSServer(handler)
	} else {
		s.Server = httptest.NewServer(handler)
	}
	t.Cleanup(s.Close)
	return s
}

func serverPort(t *testing.T, s *httptest.Server) int {
	t.Helper()
	u, err := url.Parse(s.URL)
	require.NoError(t, err)
	_, p, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

func httpHook(scheme corev1.URIScheme, port intstr.IntOrString, path string, headers ...corev1.HTTPHeader) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: scheme, Port: port, Path: path, HTTPHeaders: headers}}
}

func TestHTTPGetHook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tls     bool
		scheme  corev1.URIScheme
		port    func(p int) intstr.IntOrString
		headers []corev1.HTTPHeader
		status  int
		wantErr string
		check   func(t *testing.T, r *http.Request)
	}{
		{name: "named port, path, query and headers", port: func(int) intstr.IntOrString { return intstr.FromString("web") },
			headers: []corev1.HTTPHeader{{Name: "X-Token", Value: "s3cret"}, {Name: "Host", Value: "app.example"}, {Name: "User-Agent", Value: "mine"}},
			check: func(t *testing.T, r *http.Request) {
				assert.Equal(t, http.MethodGet, r.Method)
				assert.Equal(t, "/shutdown", r.URL.Path)
				assert.Equal(t, "now=1", r.URL.RawQuery)
				assert.Equal(t, "s3cret", r.Header.Get("X-Token"))
				assert.Equal(t, "app.example", r.Host)
				assert.Equal(t, "mine", r.Header.Get("User-Agent"))
				assert.Equal(t, "*/*", r.Header.Get("Accept"))
			}},
		{name: "numeric port", port: intstr.FromInt},
		{name: "numeric port as string", port: func(p int) intstr.IntOrString { return intstr.FromString(strconv.Itoa(p)) }},
		{name: "https without certificate verification", tls: true, scheme: corev1.URISchemeHTTPS, port: intstr.FromInt},
		{name: "https hook answered over http falls back", scheme: corev1.URISchemeHTTPS, port: intstr.FromInt,
			headers: []corev1.HTTPHeader{{Name: "Authorization", Value: "Bearer x"}},
			check:   func(t *testing.T, r *http.Request) { assert.Empty(t, r.Header.Get("Authorization")) }},
		{name: "server error is a failure", port: intstr.FromInt, status: http.StatusServiceUnavailable, wantErr: "answered 503 Service Unavailable"},
		{name: "client error is a failure", port: intstr.FromInt, status: http.StatusNotFound, wantErr: "answered 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newHookServer(t, tc.tls, func(w http.ResponseWriter, _ *http.Request) {
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				_, _ = w.Write([]byte("bye"))
			})
			port := serverPort(t, srv.Server)
			r := NewRunner(&fakeExec{}, WithHTTPHost("127.0.0.1"))
			res := r.Run(context.Background(), PreStop{
				Handler:     httpHook(tc.scheme, tc.port(port), "/shutdown?now=1", tc.headers...),
				ContainerID: "c1",
				PodIP:       "10.255.0.9", // replaced by WithHTTPHost
				Ports:       []corev1.ContainerPort{{Name: "metrics", ContainerPort: 1}, {Name: "web", ContainerPort: int32(port)}},
				Deadline:    time.Now().Add(time.Minute),
			})
			assert.Equal(t, HookHTTPGet, res.Kind)
			if tc.wantErr != "" {
				require.Error(t, res.Err)
				assert.Contains(t, res.Err.Error(), tc.wantErr)
			} else {
				require.NoError(t, res.Err)
			}
			reqs := srv.seen()
			require.Len(t, reqs, 1)
			if tc.check != nil {
				tc.check(t, reqs[0])
			}
		})
	}
}

func TestHTTPGetHookUsesPodIPAndExplicitHost(t *testing.T) {
	srv := newHookServer(t, false, nil)
	port := serverPort(t, srv.Server)
	r := NewRunner(&fakeExec{})
	// The pod IP is the default host (for a hostNetwork pod it is the node IP).
	res := r.Run(context.Background(), PreStop{Handler: httpHook("", intstr.FromInt(port), "/a"), PodIP: "127.0.0.1", HostNetwork: true, Deadline: time.Now().Add(time.Minute)})
	require.NoError(t, res.Err)
	// An explicit host wins over the pod IP.
	h := httpHook("", intstr.FromInt(port), "/b")
	h.HTTPGet.Host = "127.0.0.1"
	res = r.Run(context.Background(), PreStop{Handler: h, PodIP: "10.255.0.9", Deadline: time.Now().Add(time.Minute)})
	require.NoError(t, res.Err)
	require.Len(t, srv.seen(), 2)

	res = r.Run(context.Background(), PreStop{Handler: httpHook("", intstr.FromInt(port), "/c"), Deadline: time.Now().Add(time.Minute)})
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "no host")
}

func TestHTTPGetHookBadPorts(t *testing.T) {
	r := NewRunner(&fakeExec{}, WithHTTPHost("127.0.0.1"))
	for _, tc := range []struct {
		port intstr.IntOrString
		want string
	}{
		{intstr.FromString("admin"), `port "admin" is not among the container's ports [web=8080]`},
		{intstr.FromInt(0), "invalid port number 0"},
		{intstr.FromInt(70000), "invalid port number 70000"},
	} {
		res := r.Run(context.Background(), PreStop{
			Handler: httpHook("", tc.port, "/"), Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}},
			Deadline: time.Now().Add(time.Minute),
		})
		require.Error(t, res.Err, tc.port.String())
		assert.Contains(t, res.Err.Error(), tc.want)
	}
}

func TestHTTPGetHookRedirects(t *testing.T) {
	other := newHookServer(t, false, nil)
	otherPort := serverPort(t, other.Server)
	srv := newHookServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/elsewhere":
			// Same port number space, different host name: not followed.
			http.Redirect(w, r, "http://localhost:"+strconv.Itoa(otherPort)+"/x", http.StatusFound)
		}
	})
	port := serverPort(t, srv.Server)
	r := NewRunner(&fakeExec{}, WithHTTPHost("127.0.0.1"))

	res := r.Run(context.Background(), PreStop{Handler: httpHook("", intstr.FromInt(port), "/same"), Deadline: time.Now().Add(time.Minute)})
	require.NoError(t, res.Err)
	res = r.Run(context.Background(), PreStop{Handler: httpHook("", intstr.FromInt(port), "/elsewhere"), Deadline: time.Now().Add(time.Minute)})
	require.NoError(t, res.Err, "the 302 itself is the answer, as with the kubelet")

	var paths []string
	for _, req := range srv.seen() {
		paths = append(paths, req.URL.Path)
	}
	assert.Equal(t, []string{"/same", "/final", "/elsewhere"}, paths)
	assert.Empty(t, other.seen(), "a redirect to another host is not followed")
}

func TestHTTPGetHookServerHangsUntilGraceEnds(t *testing.T) {
	srv := newHookServer(t, false, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	r := NewRunner(&fakeExec{}, WithHTTPHost("127.0.0.1"))
	start := time.Now()
	res := r.Run(context.Background(), PreStop{Handler: httpHook("", intstr.FromInt(serverPort(t, srv.Server)), "/"), Deadline: start.Add(200 * time.Millisecond)})
	assert.ErrorIs(t, res.Err, ErrGraceExceeded)
	assert.GreaterOrEqual(t, res.Duration, 200*time.Millisecond)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestHTTPGetHookCancelled(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	srv := newHookServer(t, false, func(_ http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		<-r.Context().Done()
	})
	r := NewRunner(&fakeExec{}, WithHTTPHost("127.0.0.1"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		done <- r.Run(ctx, PreStop{Handler: httpHook("", intstr.FromInt(serverPort(t, srv.Server)), "/"), Deadline: time.Now().Add(time.Hour)})
	}()
	<-started
	cancel()
	res := <-done
	assert.ErrorIs(t, res.Err, context.Canceled)
	assert.NotErrorIs(t, res.Err, ErrGraceExceeded)
}

func sleepHook(seconds int64) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: seconds}}
}

func TestSleepHook(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seconds  int64
		deadline time.Duration
		step     time.Duration // 0: nothing to wait for
		wantIs   error
	}{
		{name: "sleeps its seconds", seconds: 5, deadline: time.Minute, step: 5 * time.Second},
		{name: "bounded by the grace period", seconds: 30, deadline: 2 * time.Second, step: 2 * time.Second, wantIs: ErrGraceExceeded},
		{name: "zero seconds", seconds: 0, deadline: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clocktesting.NewFakeClock(t0)
			r := NewRunner(&fakeExec{}, WithClock(fc))
			done := make(chan Result, 1)
			go func() {
				done <- r.Run(context.Background(), PreStop{Handler: sleepHook(tc.seconds), Deadline: t0.Add(tc.deadline)})
			}()
			if tc.step > 0 {
				require.Eventually(t, fc.HasWaiters, 5*time.Second, time.Millisecond)
				fc.Step(tc.step - time.Nanosecond)
				select {
				case res := <-done:
					t.Fatalf("returned early: %+v", res)
				default:
				}
				fc.Step(time.Nanosecond)
			}
			res := <-done
			assert.Equal(t, HookSleep, res.Kind)
			assert.Equal(t, tc.step, res.Duration)
			if tc.wantIs != nil {
				assert.ErrorIs(t, res.Err, tc.wantIs)
			} else {
				assert.NoError(t, res.Err)
			}
		})
	}
}

func TestSleepHookCancelled(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	r := NewRunner(&fakeExec{}, WithClock(fc))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- r.Run(ctx, PreStop{Handler: sleepHook(60), Deadline: t0.Add(time.Hour)}) }()
	require.Eventually(t, fc.HasWaiters, 5*time.Second, time.Millisecond)
	cancel()
	res := <-done
	assert.ErrorIs(t, res.Err, context.Canceled)
}

func TestTCPSocketAndNoHook(t *testing.T) {
	r := NewRunner(&fakeExec{})
	res := r.Run(context.Background(), PreStop{Handler: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(80)}}, Deadline: time.Now().Add(time.Minute)})
	assert.Equal(t, HookTCPSocket, res.Kind)
	assert.True(t, errors.Is(res.Err, ErrHookNotSupported))

	res = r.Run(context.Background(), PreStop{Deadline: time.Now().Add(time.Minute)})
	assert.Equal(t, HookNone, res.Kind)
	assert.NoError(t, res.Err)
}
