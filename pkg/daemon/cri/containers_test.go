package cri_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
	"github.com/nodekruise/kruise/test/unit/metrictest"
)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
)

// fakeEnv is a fake runtime behind a real socket, a Runtime connected to it
// with metrics, and the registry those metrics live in.
type fakeEnv struct {
	fake *critest.FakeRuntime
	rt   cri.Runtime
	reg  *prometheus.Registry
}

func newFakeEnv(t *testing.T) fakeEnv {
	t.Helper()
	path := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
	f := critest.NewFakeRuntime()
	critest.Serve(t, path, f)
	m := cri.NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	rt, _, err := cri.Discover(context.Background(), cri.DiscoverOptions{Endpoint: path, ProbeTimeout: probeTimeout, Metrics: m})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return fakeEnv{fake: f, rt: rt, reg: reg}
}

func podContainer(id, name string, attempt uint32, state runtimeapi.ContainerState) critest.Container {
	return critest.Container{
		ID: id, SandboxID: "sb1", PodUID: "uid-a", PodNamespace: "ns", PodName: "web",
		Name: name, Attempt: attempt, RestartCount: int(attempt), State: state,
	}
}

func TestPodContainersListsOnlyThePodAndReadsStatusOfNewest(t *testing.T) {
	env := newFakeEnv(t)
	t0 := time.Unix(1_700_000_000, 0)

	old := podContainer("app-0", "app", 0, exited)
	old.CreatedAt, old.StartedAt, old.FinishedAt, old.ExitCode = t0, t0.Add(time.Second), t0.Add(time.Minute), 137
	cur := podContainer("app-1", "app", 1, running)
	cur.CreatedAt, cur.StartedAt = t0.Add(2*time.Minute), t0.Add(2*time.Minute+time.Second)
	side := podContainer("side-0", "sidecar", 0, created)
	side.CreatedAt = t0.Add(3 * time.Minute)
	other := podContainer("other-0", "app", 5, running)
	other.PodUID = "uid-b"
	for _, c := range []critest.Container{old, cur, side, other} {
		env.fake.AddContainer(c)
	}

	var mu sync.Mutex
	var statusCalls []string
	env.fake.OnCall(func(method, id string) {
		if method == "ContainerStatus" {
			mu.Lock()
			statusCalls = append(statusCalls, id)
			mu.Unlock()
		}
	})

	got, err := env.rt.PodContainers(context.Background(), "uid-a")
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"app-1", "app-0", "side-0"}, []string{got[0].ID, got[1].ID, got[2].ID}, "by name, newest first")

	assert.Equal(t, cri.Container{
		ID: "app-1", SandboxID: "sb1", Name: "app", Attempt: 1, State: cri.ContainerRunning,
		CreatedAt: cur.CreatedAt, StatusKnown: true, StartedAt: cur.StartedAt,
		RestartCount: 1, PodUID: "uid-a", PodNamespace: "ns", PodName: "web",
	}, got[0])
	// Older instances and containers that never started cost no Status call.
	assert.False(t, got[1].StatusKnown)
	assert.Equal(t, cri.ContainerExited, got[1].State)
	assert.Equal(t, old.CreatedAt, got[1].CreatedAt)
	assert.False(t, got[2].StatusKnown)
	assert.Equal(t, cri.ContainerCreated, got[2].State)
	mu.Lock()
	assert.Equal(t, []string{"app-1"}, statusCalls)
	mu.Unlock()

	newest, ok := cri.Newest(got, "app")
	require.True(t, ok)
	assert.Equal(t, "app-1", newest.ID)
	_, ok = cri.Newest(got, "nope")
	assert.False(t, ok)
}

func TestPodContainersExitedNewestHasExitCode(t *testing.T) {
	env := newFakeEnv(t)
	c := podContainer("app-0", "app", 0, exited)
	c.StartedAt, c.FinishedAt, c.ExitCode = time.Unix(10, 0), time.Unix(20, 0), 143
	env.fake.AddContainer(c)

	got, err := env.rt.PodContainers(context.Background(), "uid-a")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.True(t, got[0].StatusKnown)
	assert.Equal(t, int32(143), got[0].ExitCode)
	assert.Equal(t, time.Unix(20, 0), got[0].FinishedAt)
}

func TestPodContainersContainerRemovedBetweenListAndStatus(t *testing.T) {
	env := newFakeEnv(t)
	env.fake.AddContainer(podContainer("app-0", "app", 0, running))
	env.fake.OnCall(func(method, id string) {
		if method == "ContainerStatus" {
			env.fake.DeleteContainer(id) // the kubelet's GC won the race
		}
	})
	got, err := env.rt.PodContainers(context.Background(), "uid-a")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.False(t, got[0].StatusKnown)
}

func TestPodContainersErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*critest.Container)
		uid     string
		wantIs  error
		wantMsg string
	}{
		{name: "empty uid", uid: "", wantMsg: "empty pod UID"},
		{name: "missing restart count", uid: "uid-a", mutate: func(c *critest.Container) { c.NoRestartCount = true },
			wantIs: cri.ErrBadRestartCount, wantMsg: `container "app" (app-0): bad io.kubernetes.container.restartCount annotation: missing`},
		{name: "garbled restart count", uid: "uid-a", mutate: func(c *critest.Container) {
			c.Annotations = map[string]string{cri.AnnotationRestartCount: "three"}
		}, wantIs: cri.ErrBadRestartCount, wantMsg: `"three" is not a non-negative integer`},
		{name: "negative restart count", uid: "uid-a", mutate: func(c *critest.Container) {
			c.Annotations = map[string]string{cri.AnnotationRestartCount: "-1"}
		}, wantIs: cri.ErrBadRestartCount, wantMsg: `"-1"`},
		{name: "overflowing restart count", uid: "uid-a", mutate: func(c *critest.Container) {
			c.Annotations = map[string]string{cri.AnnotationRestartCount: "99999999999"}
		}, wantIs: cri.ErrBadRestartCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv(t)
			c := podContainer("app-0", "app", 0, created)
			if tc.mutate != nil {
				tc.mutate(&c)
			}
			env.fake.AddContainer(c)
			_, err := env.rt.PodContainers(context.Background(), tc.uid)
			require.Error(t, err)
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			}
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestNewest(t *testing.T) {
	t0 := time.Unix(100, 0)
	cs := []cri.Container{
		{ID: "a0", Name: "a", Attempt: 0, CreatedAt: t0.Add(time.Hour)},
		{ID: "a2", Name: "a", Attempt: 2, CreatedAt: t0},
		{ID: "a2b", Name: "a", Attempt: 2, CreatedAt: t0.Add(time.Second)},
		{ID: "b0", Name: "b", Attempt: 7},
	}
	for _, tc := range []struct{ name, want string }{{"a", "a2b"}, {"b", "b0"}, {"c", ""}} {
		got, ok := cri.Newest(cs, tc.name)
		assert.Equal(t, tc.want != "", ok, tc.name)
		assert.Equal(t, tc.want, got.ID, tc.name)
	}
}

func TestRawContainerID(t *testing.T) {
	assert.Equal(t, "abc", cri.RawContainerID("containerd://abc"))
	assert.Equal(t, "abc", cri.RawContainerID("cri-o://abc"))
	assert.Equal(t, "abc", cri.RawContainerID("abc"))
}

func TestStopContainerRoundsTimeoutUpAndLeavesMargin(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		want    int64
	}{
		{-time.Second, 0}, {0, 0}, {time.Millisecond, 1}, {500 * time.Millisecond, 1},
		{time.Second, 1}, {1500 * time.Millisecond, 2}, {30 * time.Second, 30},
	} {
		t.Run(tc.timeout.String(), func(t *testing.T) {
			env := newFakeEnv(t)
			env.fake.AddContainer(podContainer("app-0", "app", 0, running))
			require.NoError(t, env.rt.StopContainer(context.Background(), "app-0", tc.timeout))

			calls := env.fake.StopCalls()
			require.Len(t, calls, 1)
			assert.Equal(t, tc.want, calls[0].Timeout)
			// The runtime must get to send SIGKILL and answer before our
			// deadline: it exceeds the CRI timeout by the margin.
			assert.Greater(t, calls[0].Deadline, time.Duration(tc.want)*time.Second+cri.CallMargin-10*time.Second)

			c, ok := env.fake.GetContainer("app-0")
			require.True(t, ok)
			assert.Equal(t, exited, c.State)
			assert.Equal(t, critest.ExitSIGTERM, c.ExitCode)
		})
	}
}

func TestStopContainerIgnoringSIGTERMIsKilledAfterTimeout(t *testing.T) {
	env := newFakeEnv(t)
	c := podContainer("app-0", "app", 0, running)
	c.IgnoreSIGTERM = true
	env.fake.AddContainer(c)
	start := time.Now()
	require.NoError(t, env.rt.StopContainer(context.Background(), "app-0", 300*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "rounded up to 1s and waited out")
	got, _ := env.fake.GetContainer("app-0")
	assert.Equal(t, critest.ExitSIGKILL, got.ExitCode)
}

func TestStopContainerNotFoundIsNotAnError(t *testing.T) {
	env := newFakeEnv(t)
	require.NoError(t, env.rt.StopContainer(context.Background(), "gone", time.Second))
	assert.Equal(t, 1.0, metrictest.CounterOrZero(t, env.reg, "kruise_daemon_cri_request_errors_total", map[string]string{"method": "StopContainer", "code": "NotFound"}))
}

func TestStopContainerCancelledWhileRuntimeHangs(t *testing.T) {
	env := newFakeEnv(t)
	env.fake.AddContainer(podContainer("app-0", "app", 0, running))
	env.fake.HangStop(true)
	arrived := make(chan struct{})
	env.fake.OnCall(func(method, _ string) {
		if method == "StopContainer" {
			close(arrived)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- env.rt.StopContainer(ctx, "app-0", 30*time.Second) }()
	<-arrived
	cancel()
	err := <-errc
	require.Error(t, err)
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Contains(t, err.Error(), "CRI StopContainer app-0 (timeout 30s)")
}

func TestExecSync(t *testing.T) {
	big := bytes.Repeat([]byte("x"), cri.ExecOutputCap)
	for _, tc := range []struct {
		name      string
		state     runtimeapi.ContainerState
		script    critest.ExecScript
		timeout   time.Duration
		wantSecs  int64
		want      cri.ExecResult
		wantCode  codes.Code
		wantError string
	}{
		{name: "ok", state: running, script: critest.ExecScript{Stdout: []byte("hi\n")}, timeout: 2 * time.Second, wantSecs: 2,
			want: cri.ExecResult{Stdout: []byte("hi\n")}},
		{name: "non-zero exit is a result", state: running, script: critest.ExecScript{Stderr: []byte("boom"), ExitCode: 3}, timeout: 1500 * time.Millisecond, wantSecs: 2,
			want: cri.ExecResult{Stderr: []byte("boom"), ExitCode: 3}},
		{name: "output capped to its tail", state: running,
			script:  critest.ExecScript{Stdout: append([]byte("head"), big...), Stderr: append(big, []byte("tail")...)},
			timeout: 0, wantSecs: 0,
			want: cri.ExecResult{Stdout: big, Stderr: append(big[4:], []byte("tail")...), Truncated: true}},
		{name: "not running", state: exited, wantCode: codes.FailedPrecondition, wantError: "is not running"},
		{name: "runtime error", state: running, script: critest.ExecScript{Err: status.Error(codes.Internal, "oops")}, wantCode: codes.Internal, wantError: "oops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv(t)
			env.fake.AddContainer(podContainer("app-0", "app", 0, tc.state))
			env.fake.SetExecScript("app-0", tc.script)
			got, err := env.rt.ExecSync(context.Background(), "app-0", []string{"sh", "-c", "echo hi"}, tc.timeout)
			if tc.wantError != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantCode, status.Code(err))
				assert.Contains(t, err.Error(), tc.wantError)
				assert.Equal(t, 1.0, metrictest.CounterOrZero(t, env.reg, "kruise_daemon_cri_request_errors_total", map[string]string{"method": "ExecSync", "code": tc.wantCode.String()}))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			calls := env.fake.ExecCalls()
			require.Len(t, calls, 1)
			assert.Equal(t, []string{"sh", "-c", "echo hi"}, calls[0].Cmd)
			assert.Equal(t, tc.wantSecs, calls[0].Timeout)
			if tc.wantSecs == 0 {
				// No runtime-side limit: the call timeout bounds the call.
				assert.LessOrEqual(t, calls[0].Deadline, cri.DefaultCallTimeout)
				assert.Greater(t, calls[0].Deadline, cri.DefaultCallTimeout-10*time.Second)
			} else {
				assert.Greater(t, calls[0].Deadline, time.Duration(tc.wantSecs)*time.Second)
			}
		})
	}
}

func TestExecSyncRuntimeTimeout(t *testing.T) {
	env := newFakeEnv(t)
	env.fake.AddContainer(podContainer("app-0", "app", 0, running))
	env.fake.SetExecScript("app-0", critest.ExecScript{Hang: true})
	_, err := env.rt.ExecSync(context.Background(), "app-0", []string{"sleep", "100"}, time.Second)
	require.Error(t, err)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Contains(t, err.Error(), "timeout 1s exceeded")
	assert.NotContains(t, err.Error(), "did not answer", "the runtime answered: its own timeout")
}

// TestRealRuntimeContainers lists the containers of a real pod and runs a
// command in one. It needs KRUISE_TEST_CRI_ENDPOINT (the runtime's socket)
// and KRUISE_TEST_POD_UID (a running pod on that node whose first container
// has a shell with echo, e.g. busybox).
func TestRealRuntimeContainers(t *testing.T) {
	ep, uid := os.Getenv("KRUISE_TEST_CRI_ENDPOINT"), os.Getenv("KRUISE_TEST_POD_UID")
	if ep == "" || uid == "" {
		t.Skip("KRUISE_TEST_CRI_ENDPOINT and KRUISE_TEST_POD_UID not both set")
	}
	m := cri.NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	ctx := context.Background()
	rt, _, err := cri.Discover(ctx, cri.DiscoverOptions{Endpoint: ep, Metrics: m})
	require.NoError(t, err)
	defer rt.Close()

	cs, err := rt.PodContainers(ctx, uid)
	require.NoError(t, err)
	require.NotEmpty(t, cs, "pod %s has no containers on this runtime", uid)
	for _, c := range cs {
		t.Logf("%s/%s container %q id=%s attempt=%d state=%s restartCount=%d created=%s started=%s statusKnown=%t",
			c.PodNamespace, c.PodName, c.Name, c.ID, c.Attempt, c.State, c.RestartCount, c.CreatedAt, c.StartedAt, c.StatusKnown)
		assert.Equal(t, uid, c.PodUID)
	}
	newest, ok := cri.Newest(cs, cs[0].Name)
	require.True(t, ok)
	require.Equal(t, cri.ContainerRunning, newest.State)
	assert.True(t, newest.StatusKnown)
	assert.False(t, newest.StartedAt.IsZero())

	res, err := rt.ExecSync(ctx, newest.ID, []string{"echo", "hi"}, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(res.Stdout))
	assert.Zero(t, res.ExitCode)

	res, err = rt.ExecSync(ctx, newest.ID, []string{"sh", "-c", "exit 3"}, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int32(3), res.ExitCode)

	// The runtime enforces the timeout itself; the preStop runner relies on
	// the code to tell "grace ran out" from other failures.
	start := time.Now()
	_, err = rt.ExecSync(ctx, newest.ID, []string{"sleep", "30"}, time.Second)
	require.Error(t, err)
	t.Logf("ExecSync past its timeout after %s: %v", time.Since(start), err)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Less(t, time.Since(start), 10*time.Second)

	// A container that does not exist is already stopped.
	require.NoError(t, rt.StopContainer(ctx, "0000000000000000000000000000000000000000000000000000000000000000", time.Second))
	assert.Equal(t, 1.0, metrictest.CounterOrZero(t, reg, "kruise_daemon_cri_request_errors_total", map[string]string{"method": "StopContainer", "code": "NotFound"}))
}
