package podprobe

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// fakeExec answers ExecSync from a script: exit codes (or errors) in turn,
// the last one repeated.
type fakeExec struct {
	mu    sync.Mutex
	codes []int32
	err   error
	calls []string // container IDs
	// lists counts PodContainers calls; listErr fails them.
	lists   int
	listErr error
	// called, if set, gets each call's container ID.
	called chan string
}

func (f *fakeExec) ExecSync(_ context.Context, id string, _ []string, _ time.Duration) (cri.ExecResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, id)
	code := int32(0)
	if len(f.codes) > 0 {
		code = f.codes[0]
		if len(f.codes) > 1 {
			f.codes = f.codes[1:]
		}
	}
	err, ch := f.err, f.called
	f.mu.Unlock()
	if ch != nil {
		ch <- id
	}
	return cri.ExecResult{ExitCode: code, Stdout: []byte("secret-output")}, err
}

// PodContainers lists "main" of pod uid-1 in each container ID it was
// asked to exec in or that foreign does not name; foreign IDs belong to
// another pod.
func (f *fakeExec) PodContainers(_ context.Context, uid string) ([]cri.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []cri.Container
	for _, id := range []string{"c1", "c2", "evil"} {
		owner := "uid-1"
		if id == "evil" {
			owner = "uid-other"
		}
		if owner == uid {
			out = append(out, cri.Container{ID: id, Name: "main", PodUID: owner})
		}
	}
	return out, nil
}

func (f *fakeExec) script(codes ...int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes = codes
}

func (f *fakeExec) nCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// probePod is a pod of node-a with one running container "main" started at
// started.
func probePod(containerID string, started time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "main",
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{PodIP: "10.244.0.7", PodIPs: []corev1.PodIP{{IP: "10.244.0.7"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", ContainerID: containerID,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}},
	}
}

func execJob(p corev1.Probe) job {
	if p.Exec == nil && p.TCPSocket == nil && p.HTTPGet == nil && p.GRPC == nil {
		p.Exec = &corev1.ExecAction{Command: []string{"check"}}
	}
	return job{namespace: "ns", pod: "p", uid: "uid-1", ip: "10.244.0.7", container: "main", probeName: "m#idle", probe: p}
}

// harness runs one worker's probeOnce by hand, on a fake clock.
type harness struct {
	clk     *clocktesting.FakeClock
	exec    *fakeExec
	pod     *corev1.Pod
	w       *worker
	changes int
}

func newHarness(t *testing.T, j job) *harness {
	h := &harness{clk: clocktesting.NewFakeClock(t0), exec: &fakeExec{}, pod: probePod("containerd://c1", t0)}
	env := &workerEnv{
		node:      "node-a",
		pod:       func(ns, name string) *corev1.Pod { return h.pod },
		runtime:   h.exec,
		now:       h.clk.Now,
		nodeAddrs: func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("192.0.2.10")} },
		metrics:   NewMetrics(),
		changed:   func() { h.changes++ },
	}
	h.w = newWorker(env, j)
	return h
}

// tick moves the clock on by a period and probes once.
func (h *harness) tick(d time.Duration) {
	h.clk.Step(d)
	h.w.probeOnce(context.Background())
}

func (h *harness) state(t *testing.T) appsv1alpha1.ProbeState {
	t.Helper()
	r, ok := h.w.current()
	if !ok {
		return ""
	}
	return r.state
}

// Thresholds count consecutive equal results, both ways.
func TestThresholds(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{SuccessThreshold: 3, FailureThreshold: 2}))
	h.exec.script(0, 0, 1, 0, 0, 0, 1, 0, 1, 1)
	h.tick(time.Second)
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeState(""), h.state(t), "two successes of three: no result yet")
	h.tick(time.Second) // failure breaks the run
	h.tick(time.Second)
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeState(""), h.state(t))
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, h.state(t), "three in a row")
	first, _ := h.w.current()
	h.tick(time.Second) // one failure of two
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, h.state(t))
	h.tick(time.Second) // success again
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, h.state(t))
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeFailed, h.state(t), "two failures in a row")
	r, _ := h.w.current()
	assert.Equal(t, "exit code 1", r.msg, "a short reason, not the output")
	assert.Equal(t, h.clk.Now(), r.transition)
	assert.Equal(t, h.clk.Now(), r.probeTime)
	assert.Equal(t, 2, h.changes, "told only on a change")
	assert.Equal(t, t0.Add(6*time.Second), first.transition)
	assert.Equal(t, 10, h.exec.nCalls())
}

// Unset numbers are 1, as OpenKruise's: one result flips the state.
func TestDefaultsFlipOnOneResult(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{}))
	h.exec.script(1, 0)
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeFailed, h.state(t))
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, h.state(t))
}

// Steady results report nothing new: no status write is asked for.
func TestSteadyResultsAskNoWrite(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{}))
	for range 20 {
		h.tick(time.Second)
	}
	assert.Equal(t, 1, h.changes)
	r, _ := h.w.current()
	assert.Equal(t, t0.Add(time.Second), r.probeTime, "the time of the reported result")
}

func TestInitialDelayFromContainerStart(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{InitialDelaySeconds: 5}))
	h.tick(4 * time.Second)
	assert.Zero(t, h.exec.nCalls(), "within the initial delay")
	assert.Equal(t, appsv1alpha1.ProbeState(""), h.state(t))
	h.tick(time.Second)
	assert.Equal(t, 1, h.exec.nCalls())
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, h.state(t))
}

func TestExecTimeoutFails(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{TimeoutSeconds: 2}))
	h.exec.err = status.Error(codes.DeadlineExceeded, "deadline")
	h.tick(time.Second)
	r, _ := h.w.current()
	assert.Equal(t, appsv1alpha1.ProbeFailed, r.state)
	assert.Equal(t, "timed out after 2s", r.msg)
}

// exec runs in the container the status of the pod with the job's UID
// names; another pod of the same name is not probed.
func TestExecTargetsThePodsContainer(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{}))
	h.tick(time.Second)
	assert.Equal(t, []string{"c1"}, h.exec.calls)

	h.pod = probePod("containerd://other", t0)
	h.pod.UID = "uid-2"
	h.tick(time.Second)
	assert.Len(t, h.exec.calls, 1, "a pod of the same name and another UID is not probed")

	h.pod = probePod("containerd://c1", t0)
	h.pod.Spec.NodeName = "node-b"
	h.tick(time.Second)
	assert.Len(t, h.exec.calls, 1, "a pod of another node is not probed")

	h.pod = nil
	h.tick(time.Second)
	assert.Len(t, h.exec.calls, 1, "a pod not in the informer is not probed")
}

// The runtime confirms, once per container instance, that the container
// the pod's status names is that pod's: a status pointing at another pod's
// container gets no exec.
func TestExecVerifiesTheContainerIsThePods(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{}))
	h.tick(time.Second)
	h.tick(time.Second)
	assert.Equal(t, []string{"c1", "c1"}, h.exec.calls)
	assert.Equal(t, 1, h.exec.lists, "verified once per instance")

	h.pod = probePod("containerd://evil", h.clk.Now().Add(-time.Minute))
	h.tick(time.Second)
	r, _ := h.w.current()
	assert.Equal(t, appsv1alpha1.ProbeFailed, r.state)
	assert.Equal(t, errForeignContainer.Error(), r.msg)
	assert.Equal(t, []string{"c1", "c1"}, h.exec.calls, "no exec in another pod's container")

	h2 := newHarness(t, execJob(corev1.Probe{}))
	h2.exec.listErr = status.Error(codes.Unavailable, "down")
	h2.tick(time.Second)
	_, ok := h2.w.current()
	assert.False(t, ok, "the runtime could not tell: no result")
	assert.Empty(t, h2.exec.calls)
}

func TestContainerNotRunningFails(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{FailureThreshold: 3}))
	h.pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	h.tick(time.Second)
	r, ok := h.w.current()
	require.True(t, ok)
	assert.Equal(t, appsv1alpha1.ProbeFailed, r.state, "at once, as OpenKruise")
	assert.Equal(t, "container not running", r.msg)
	assert.Zero(t, h.exec.nCalls())

	h.pod.Status.ContainerStatuses[0].ContainerID = ""
	h.pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
	h2 := newHarness(t, execJob(corev1.Probe{}))
	h2.pod = h.pod
	h2.tick(time.Second)
	_, ok = h2.w.current()
	assert.False(t, ok, "a container never created has no result")
}

// A new container instance starts over: Unknown, its initial delay from its
// own start, the thresholds counted again.
func TestContainerRestartResets(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{InitialDelaySeconds: 3, SuccessThreshold: 2}))
	h.tick(3 * time.Second)
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, h.state(t))

	h.pod = probePod("containerd://c2", h.clk.Now())
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeUnknown, h.state(t), "the new instance has no result yet")
	h.tick(time.Second)
	h.tick(time.Second) // 3 s after the new start: first probe
	assert.Equal(t, appsv1alpha1.ProbeUnknown, h.state(t), "one success of two")
	h.tick(time.Second)
	assert.Equal(t, appsv1alpha1.ProbeSucceeded, h.state(t))
	assert.Equal(t, []string{"c1", "c1", "c2", "c2"}, h.exec.calls)
}

func TestGRPCNotSupported(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}}))
	h.tick(time.Second)
	r, _ := h.w.current()
	assert.Equal(t, appsv1alpha1.ProbeFailed, r.state)
	assert.Equal(t, "grpc probes are not supported", r.msg)
}

// The worker refuses addresses the guard refuses, with a short reason.
func TestWorkerRefusesGuardedAddresses(t *testing.T) {
	tcp := corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("web")}}}
	h := newHarness(t, execJob(tcp))
	h.pod.Spec.HostNetwork = true
	h.tick(time.Second)
	r, _ := h.w.current()
	assert.Equal(t, appsv1alpha1.ProbeFailed, r.state)
	assert.Equal(t, errHostNetwork.Error(), r.msg)
	assert.True(t, h.w.refusedLogged)

	get := corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	j := execJob(get)
	j.ip = "10.244.0.99"
	h = newHarness(t, j)
	h.tick(time.Second)
	r, _ = h.w.current()
	assert.Equal(t, errNotPodIP.Error(), r.msg)

	h = newHarness(t, execJob(tcp))
	h.pod.Status.PodIP, h.pod.Status.PodIPs = "192.0.2.10", []corev1.PodIP{{IP: "192.0.2.10"}}
	h.w.job.ip = "192.0.2.10"
	h.tick(time.Second)
	r, _ = h.w.current()
	assert.Equal(t, errNodeAddress.Error(), r.msg)

	h = newHarness(t, execJob(corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("nope")}}}))
	h.tick(time.Second)
	r, _ = h.w.current()
	assert.Equal(t, `port "nope" is not a port of the pod`, r.msg)
}

// The first probe waits a random part of the period, never a whole one.
func TestJitterBound(t *testing.T) {
	for _, f := range []float64{0, 0.25, 0.999999, 1, -1} {
		d := jitter(10*time.Second, func() float64 { return f })
		assert.GreaterOrEqual(t, d, time.Duration(0), f)
		assert.Less(t, d, 10*time.Second, f)
	}
	assert.Equal(t, 2500*time.Millisecond, jitter(10*time.Second, func() float64 { return 0.25 }))
}

// The loop waits its jitter, then probes every period.
func TestLoopWaitsThenProbesEveryPeriod(t *testing.T) {
	h := newHarness(t, execJob(corev1.Probe{PeriodSeconds: 10}))
	h.exec.called = make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rec := &recordingClock{FakeClock: h.clk}
	go func() {
		defer close(done)
		h.w.loop(ctx, rec, 4*time.Second)
	}()
	require.Eventually(t, h.clk.HasWaiters, 5*time.Second, time.Millisecond)
	assert.Equal(t, []time.Duration{4 * time.Second}, rec.timers(), "the first wait is the jitter")
	h.clk.Step(4 * time.Second)
	assert.Equal(t, "c1", <-h.exec.called)
	require.Eventually(t, func() bool { return len(rec.tickers()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []time.Duration{10 * time.Second}, rec.tickers())
	h.clk.Step(10 * time.Second)
	assert.Equal(t, "c1", <-h.exec.called)
	cancel()
	<-done
}

// recordingClock records the durations of the timers and tickers made.
type recordingClock struct {
	*clocktesting.FakeClock
	mu                sync.Mutex
	timerDs, tickerDs []time.Duration
}

func (c *recordingClock) NewTimer(d time.Duration) clockTimer {
	c.mu.Lock()
	c.timerDs = append(c.timerDs, d)
	c.mu.Unlock()
	return c.FakeClock.NewTimer(d)
}

func (c *recordingClock) NewTicker(d time.Duration) clockTicker {
	c.mu.Lock()
	c.tickerDs = append(c.tickerDs, d)
	c.mu.Unlock()
	return c.FakeClock.NewTicker(d)
}

func (c *recordingClock) timers() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.timerDs...)
}

func (c *recordingClock) tickers() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.tickerDs...)
}

type (
	clockTimer  = clock.Timer
	clockTicker = clock.Ticker
)
