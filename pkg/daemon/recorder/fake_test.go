package recorder

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// t0 has nanoseconds so that the name's hex UnixNano is checked in full.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// call is one request the fake Sink got.
type call struct {
	op              string // "create" or "patch"
	namespace, name string
	event           *corev1.Event // create: what was sent
	patch           map[string]any
	count           int32       // patch: its count
	lastTimestamp   metav1.Time // patch: its lastTimestamp
	err             error       // what the Sink answered
}

// fakeSink records the requests it gets. Its hooks, set before New, script
// the answers: n counts the calls of that kind from 1.
type fakeSink struct {
	createHook func(ctx context.Context, n int, e *corev1.Event) error
	patchHook  func(ctx context.Context, n int) error

	mu               sync.Mutex
	creates, patches int
	calls            []call
}

func (s *fakeSink) Create(ctx context.Context, e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	s.creates++
	n := s.creates
	s.mu.Unlock()
	var err error
	if s.createHook != nil {
		err = s.createHook(ctx, n, e)
	}
	s.add(call{op: "create", namespace: e.Namespace, name: e.Name, event: e.DeepCopy(), err: err})
	if err != nil {
		return nil, err
	}
	return e.DeepCopy(), nil
}

func (s *fakeSink) Patch(ctx context.Context, namespace, name string, data []byte) (*corev1.Event, error) {
	s.mu.Lock()
	s.patches++
	n := s.patches
	s.mu.Unlock()
	var err error
	if s.patchHook != nil {
		err = s.patchHook(ctx, n)
	}
	c := call{op: "patch", namespace: namespace, name: name, err: err}
	var typed struct {
		Count         int32       `json:"count"`
		LastTimestamp metav1.Time `json:"lastTimestamp"`
	}
	if jerr := json.Unmarshal(data, &c.patch); jerr != nil {
		c.err = jerr
	} else if jerr := json.Unmarshal(data, &typed); jerr != nil {
		c.err = jerr
	}
	c.count, c.lastTimestamp = typed.Count, typed.LastTimestamp
	s.add(c)
	if c.err != nil {
		return nil, c.err
	}
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Count: typed.Count}, nil
}

func (s *fakeSink) add(c call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *fakeSink) snapshot() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// waitCalls waits until the Sink has answered n requests and returns them.
func (s *fakeSink) waitCalls(t *testing.T, n int) []call {
	t.Helper()
	eventually(t, "Sink calls", func() bool { return len(s.snapshot()) >= n })
	return s.snapshot()
}

// harness is a Recorder on a fake Sink and a fake clock, logging into a buffer.
type harness struct {
	r      *Recorder
	sink   *fakeSink
	clock  *clocktesting.FakeClock
	logs   ktesting.Buffer
	cancel context.CancelFunc // New's ctx
}

func start(t *testing.T, sink *fakeSink, knobs func(*Options)) *harness {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(5)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	clk := clocktesting.NewFakeClock(t0)
	o := Options{
		Sink:      sink,
		Scheme:    testScheme(),
		Component: "kruise-daemon",
		Host:      "node-a",
		Clock:     clk,
	}
	if knobs != nil {
		knobs(&o)
	}
	h := &harness{
		r:      New(ctx, o),
		sink:   sink,
		clock:  clk,
		logs:   logger.GetSink().(ktesting.Underlier).GetBuffer(),
		cancel: cancel,
	}
	t.Cleanup(func() {
		// Bounded, so that a Stop that hangs fails the test rather than
		// hanging the run.
		if !h.stopWithin(10 * time.Second) {
			t.Error("Stop did not return")
		}
		cancel()
	})
	return h
}

// stop stops the recorder, failing the test if that takes longer than the
// flush could.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	if !h.stopWithin(10 * time.Second) {
		t.Fatal("timed out waiting for Stop to return")
	}
}

func (h *harness) stopWithin(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		h.r.Stop()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// stepRetry lets the worker's retry wait end: it waits until the worker
// waits on the clock, then moves the clock a full retry interval on.
func (h *harness) stepRetry(t *testing.T) {
	t.Helper()
	eventually(t, "a retry wait", h.clock.HasWaiters)
	h.clock.Step(h.r.retryInterval)
}

// logged returns the log entries with message msg.
func (h *harness) logged(msg string) []ktesting.LogEntry {
	var out []ktesting.LogEntry
	for _, e := range h.logs.Data() {
		if e.Message == msg {
			out = append(out, e)
		}
	}
	return out
}

// value is the value of key in a log entry's key/value pairs.
func value(e ktesting.LogEntry, key string) any {
	kv := e.ParameterKVList
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == key {
			return kv[i+1]
		}
	}
	return nil
}

// testScheme knows Pods and Nodes only, so that any other kind is unknown.
func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.Pod{}, &corev1.Node{})
	return s
}

// pod is a pod of namespace team-a whose UID and resourceVersion the
// Events must carry.
func pod(name string) *corev1.Pod {
	return gen.Pod(name, gen.SetPodNamespace("team-a"), gen.SetPodUID(types.UID("uid-pod-"+name)), gen.SetPodResourceVersion("42"))
}

// node is a node whose UID the Events must carry.
func node(name string) *corev1.Node {
	return gen.Node(name, gen.SetNodeUID(types.UID("uid-node-"+name)))
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
