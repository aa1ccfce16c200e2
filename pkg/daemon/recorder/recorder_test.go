package recorder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
)

// client-go's recorders stand in for the daemon's in tests.
var (
	_ EventRecorder = (*record.FakeRecorder)(nil)
	_ EventRecorder = record.EventRecorder(nil)
	_ EventRecorder = (*Recorder)(nil)
)

var eventsGR = schema.GroupResource{Resource: "events"}

func TestEventFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		object runtime.Object
		want   corev1.ObjectReference
		ns     string
	}{{
		name:   "namespaced Pod",
		object: pod("web-0"),
		want: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "team-a", Name: "web-0",
			UID: "uid-pod-web-0", ResourceVersion: "42"},
		ns: "team-a",
	}, {
		name:   "cluster-scoped Node",
		object: node("node-a"),
		want:   corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-a", UID: "uid-node-node-a"},
		ns:     "default",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, &fakeSink{}, nil)
			h.r.Eventf(tc.object, corev1.EventTypeWarning, "PullFailed", "pulling %s: %v", "nginx:1", "denied")
			h.stop(t)

			calls := h.sink.snapshot()
			require.Len(t, calls, 1)
			require.Equal(t, "create", calls[0].op)
			now := metav1.NewTime(t0)
			want := &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{
					Name:      fmt.Sprintf("%s.%x", tc.want.Name, t0.UnixNano()),
					Namespace: tc.ns,
				},
				InvolvedObject: tc.want,
				Reason:         "PullFailed",
				Message:        "pulling nginx:1: denied",
				Type:           corev1.EventTypeWarning,
				FirstTimestamp: now,
				LastTimestamp:  now,
				Count:          1,
				Source:         corev1.EventSource{Component: "kruise-daemon", Host: "node-a"},
				// As client-go's recorder; EventTime stays unset.
				ReportingController: "kruise-daemon",
				ReportingInstance:   "node-a",
			}
			assert.Equal(t, want, calls[0].event)
			assert.True(t, strings.HasPrefix(calls[0].name, tc.want.Name+"."), "name %q", calls[0].name)

			occurred := h.logged("Event occurred")
			require.Len(t, occurred, 1)
			assert.Equal(t, 4, occurred[0].Verbosity)
			assert.Equal(t, tc.want.Kind, value(occurred[0], "kind"))
			assert.Equal(t, "v1", value(occurred[0], "apiVersion"))
			assert.Equal(t, "PullFailed", value(occurred[0], "reason"))
			assert.Equal(t, "pulling nginx:1: denied", value(occurred[0], "message"))
		})
	}
}

func TestRepeatPatchesCount(t *testing.T) {
	h := start(t, &fakeSink{}, nil)
	for range 3 {
		h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Pulled", "pulled nginx:1")
		h.clock.Step(time.Minute)
	}
	// Not repeats: another message, another object.
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Pulled", "pulled nginx:2")
	h.r.Event(pod("web-1"), corev1.EventTypeNormal, "Pulled", "pulled nginx:1")
	h.stop(t)

	calls := h.sink.snapshot()
	require.Len(t, calls, 5)
	first := calls[0]
	require.Equal(t, "create", first.op)
	for i, c := range calls[1:3] {
		assert.Equal(t, "patch", c.op)
		assert.Equal(t, "team-a", c.namespace)
		assert.Equal(t, first.name, c.name, "patches the Event created first")
		assert.Equal(t, int32(i+2), c.count)
		assert.True(t, c.lastTimestamp.Equal(&metav1.Time{Time: t0.Add(time.Duration(i+1) * time.Minute).Truncate(time.Second)}),
			"lastTimestamp %v", c.lastTimestamp)
		assert.Len(t, c.patch, 2, "a merge patch of count and lastTimestamp only: %v", c.patch)
	}
	assert.Equal(t, "create", calls[3].op)
	assert.Equal(t, "pulled nginx:2", calls[3].event.Message)
	assert.Equal(t, "create", calls[4].op)
	assert.Equal(t, "web-1", calls[4].event.InvolvedObject.Name)
}

func TestPatchNotFoundCreates(t *testing.T) {
	sink := &fakeSink{patchHook: func(_ context.Context, n int) error {
		if n == 1 {
			return apierrors.NewNotFound(eventsGR, "expired")
		}
		return nil
	}}
	h := start(t, sink, nil)
	for range 3 {
		h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Pulled", "pulled nginx:1")
		h.clock.Step(time.Second) // so that every Event gets a name of its own
	}
	h.stop(t)

	calls := h.sink.snapshot()
	require.Len(t, calls, 4)
	assert.Equal(t, "create", calls[0].op)
	assert.Equal(t, "patch", calls[1].op)
	assert.Equal(t, calls[0].name, calls[1].name)
	assert.True(t, apierrors.IsNotFound(calls[1].err))
	// The second occurrence becomes an Event of its own, counting from 1 ...
	assert.Equal(t, "create", calls[2].op)
	assert.NotEqual(t, calls[0].name, calls[2].name)
	assert.Equal(t, fmt.Sprintf("web-0.%x", t0.Add(time.Second).UnixNano()), calls[2].name)
	assert.Equal(t, int32(1), calls[2].event.Count)
	// ... which the third occurrence patches.
	assert.Equal(t, "patch", calls[3].op)
	assert.Equal(t, calls[2].name, calls[3].name)
	assert.Equal(t, int32(2), calls[3].count)
}

func TestSpamFilterPerObject(t *testing.T) {
	h := start(t, &fakeSink{}, nil)
	for i := range 30 {
		h.r.Eventf(pod("noisy"), corev1.EventTypeWarning, "Failed", "attempt %d", i)
	}
	h.r.Event(pod("quiet"), corev1.EventTypeWarning, "Failed", "attempt 0")
	calls := h.sink.waitCalls(t, 26) // the quiet pod's is the last queued
	require.Len(t, calls, 26)
	var noisy []string
	for _, c := range calls {
		if c.event.InvolvedObject.Name == "noisy" {
			noisy = append(noisy, c.event.Message)
		}
	}
	assert.Len(t, noisy, 25, "the burst")
	assert.Equal(t, "attempt 24", noisy[24])
	assert.Equal(t, "quiet", calls[25].event.InvolvedObject.Name, "another object has a bucket of its own")
	assert.Len(t, h.logged("Too many Events about the object, dropping the Event"), 5)

	// One token comes back every 5 minutes.
	h.clock.Step(5 * time.Minute)
	h.r.Event(pod("noisy"), corev1.EventTypeWarning, "Failed", "after 5m")
	h.r.Event(pod("noisy"), corev1.EventTypeWarning, "Failed", "one too many")
	h.stop(t)
	calls = h.sink.snapshot()
	require.Len(t, calls, 27)
	assert.Equal(t, "after 5m", calls[26].event.Message)
}

func TestInvalidTypeDropped(t *testing.T) {
	h := start(t, &fakeSink{}, nil)
	h.r.Event(pod("web-0"), "Critical", "Boom", "not a type")
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Fine", "a type")
	h.stop(t)

	calls := h.sink.snapshot()
	require.Len(t, calls, 1)
	assert.Equal(t, "Fine", calls[0].event.Reason)
	errs := h.logged("Unsupported Event type, dropping the Event")
	require.Len(t, errs, 1)
	assert.Equal(t, "Critical", value(errs[0], "type"))
}

func TestUnreferenceableObjectsDropped(t *testing.T) {
	h := start(t, &fakeSink{}, nil)
	objects := map[string]runtime.Object{
		"kind not in scheme": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cm"}},
		"nil":                nil,
		"typed nil":          (*corev1.Pod)(nil),
	}
	for name, o := range objects {
		require.NotPanics(t, func() { h.r.Event(o, corev1.EventTypeNormal, "Seen", name) }, name)
	}
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Seen", "a Pod")
	h.stop(t)

	calls := h.sink.snapshot()
	require.Len(t, calls, 1)
	assert.Equal(t, "a Pod", calls[0].event.Message)
	errs := h.logged("Could not make a reference to the object, dropping the Event")
	require.Len(t, errs, len(objects))
	for _, e := range errs {
		assert.Error(t, e.Err)
	}
}

func TestTransientErrorRetried(t *testing.T) {
	sink := &fakeSink{createHook: func(_ context.Context, n int, _ *corev1.Event) error {
		switch n {
		case 1:
			return errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
		case 2:
			return apierrors.NewTooManyRequests("slow down", 1)
		}
		return nil
	}}
	h := start(t, sink, nil)
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Pulled", "pulled nginx:1")
	h.stepRetry(t)
	h.stepRetry(t)
	calls := h.sink.waitCalls(t, 3)
	require.Len(t, calls, 3)
	for _, c := range calls {
		assert.Equal(t, "create", c.op)
		assert.Equal(t, calls[0].name, c.name, "the same Event, retried")
	}
	assert.NoError(t, calls[2].err)

	// A success is remembered: the repeat patches.
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Pulled", "pulled nginx:1")
	h.stop(t)
	calls = h.sink.snapshot()
	require.Len(t, calls, 4)
	assert.Equal(t, "patch", calls[3].op)
	assert.Equal(t, calls[0].name, calls[3].name)
	assert.Empty(t, h.logged("Could not write the Event, dropping it"))
}

func TestRetriesEndAfterMaxAttempts(t *testing.T) {
	sink := &fakeSink{createHook: func(_ context.Context, n int, _ *corev1.Event) error {
		if n <= defaultMaxAttempts {
			return apierrors.NewInternalError(errors.New("etcd down"))
		}
		return nil
	}}
	h := start(t, sink, nil)
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Pulled", "first")
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Pulled", "second")
	for range defaultMaxAttempts - 1 {
		h.stepRetry(t)
	}
	// No more steps: a 13th attempt at the first would wait forever, and the
	// second would never be written.
	calls := h.sink.waitCalls(t, defaultMaxAttempts+1)
	require.Len(t, calls, defaultMaxAttempts+1)
	for _, c := range calls[:defaultMaxAttempts] {
		assert.Equal(t, "first", c.event.Message)
	}
	assert.Equal(t, "second", calls[defaultMaxAttempts].event.Message)
	errs := h.logged("Could not write the Event, dropping it")
	require.Len(t, errs, 1)
	assert.ErrorContains(t, errs[0].Err, "giving up after 12 attempts")
	assert.True(t, apierrors.IsInternalError(errs[0].Err), "wraps the cause: %v", errs[0].Err)
}

func TestPermanentErrorsNotRetried(t *testing.T) {
	for name, err := range map[string]error{
		"Forbidden":     apierrors.NewForbidden(eventsGR, "x", errors.New("policy says no")),
		"AlreadyExists": apierrors.NewAlreadyExists(eventsGR, "x"),
		"Invalid":       apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, "x", field.ErrorList{field.Required(field.NewPath("reason"), "")}),
		"BadRequest":    apierrors.NewBadRequest("bad"),
	} {
		t.Run(name, func(t *testing.T) {
			sink := &fakeSink{createHook: func(_ context.Context, n int, _ *corev1.Event) error {
				if n == 1 {
					return err
				}
				return nil
			}}
			h := start(t, sink, nil)
			h.r.Event(pod("web-0"), corev1.EventTypeWarning, "Refused", "first")
			h.r.Event(pod("web-0"), corev1.EventTypeWarning, "Refused", "second")
			// Nobody steps the clock: a retry of the first would block the second.
			calls := h.sink.waitCalls(t, 2)
			require.Len(t, calls, 2)
			assert.Equal(t, "first", calls[0].event.Message)
			assert.Equal(t, "second", calls[1].event.Message)
			assert.False(t, h.clock.HasWaiters())

			errs := h.logged("Could not write the Event, dropping it")
			require.Len(t, errs, 1)
			assert.ErrorIs(t, errs[0].Err, err)
			assert.Equal(t, "Refused", value(errs[0], "reason"))
			assert.Equal(t, "team-a/web-0", fmt.Sprint(value(errs[0], "object")))
		})
	}
}

func TestQueueFullDropsWithoutBlocking(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	sink := &fakeSink{createHook: func(ctx context.Context, n int, _ *corev1.Event) error {
		if n == 1 {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}}
	h := start(t, sink, func(o *Options) { o.queueSize = 2 })
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "1")
	within(t, entered, "the worker to take the first Event")

	returned := make(chan struct{})
	go func() {
		defer close(returned)
		for i := 2; i <= 5; i++ { // 2 and 3 fill the queue; 4 and 5 do not fit
			h.r.Eventf(pod("web-0"), corev1.EventTypeNormal, "N", "%d", i)
		}
	}()
	within(t, returned, "Event to return with the queue full")
	full := h.logged("Event queue full, dropping Events")
	require.Len(t, full, 1, "at most one error a second")
	assert.Equal(t, int64(1), value(full[0], "dropped"))
	assert.Equal(t, "4", value(full[0], "message"))

	h.clock.Step(2 * dropLogInterval)
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "6")
	full = h.logged("Event queue full, dropping Events")
	require.Len(t, full, 2)
	assert.Equal(t, int64(2), value(full[1], "dropped"), "5 and 6, since the last error")

	close(release)
	h.stop(t)
	var got []string
	for _, c := range h.sink.snapshot() {
		got = append(got, c.event.Message)
	}
	assert.Equal(t, []string{"1", "2", "3"}, got)
}

func TestStopFlushesQueued(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	sink := &fakeSink{createHook: func(_ context.Context, n int, _ *corev1.Event) error {
		if n == 1 {
			close(entered)
			<-release
		}
		return nil
	}}
	h := start(t, sink, nil)
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "1")
	within(t, entered, "the worker to take the first Event")
	for i := 2; i <= 5; i++ {
		h.r.Eventf(pod("web-0"), corev1.EventTypeNormal, "N", "%d", i)
	}

	stopped := make(chan struct{})
	go func() {
		h.r.Stop()
		close(stopped)
	}()
	within(t, h.r.stopping, "Stop to begin")
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "after Stop")
	select {
	case <-stopped:
		t.Fatal("Stop returned with Events still queued")
	default:
	}
	close(release)
	within(t, stopped, "Stop to return")

	var got []string
	for _, c := range h.sink.snapshot() {
		got = append(got, c.event.Message)
	}
	assert.Equal(t, []string{"1", "2", "3", "4", "5"}, got)
	assert.Len(t, h.logged("Recorder stopped, dropping the Event"), 1)
}

func TestStopGivesUpRetriesAtFlushDeadline(t *testing.T) {
	sink := &fakeSink{createHook: func(context.Context, int, *corev1.Event) error {
		return apierrors.NewServiceUnavailable("apiserver restarting")
	}}
	h := start(t, sink, func(o *Options) { o.flushTimeout = 50 * time.Millisecond })
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "retrying")
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "queued")
	h.sink.waitCalls(t, 1)
	eventually(t, "the retry wait", h.clock.HasWaiters)

	// The fake clock never moves: only the flush deadline ends the wait.
	h.stop(t)
	calls := h.sink.snapshot()
	require.Len(t, calls, 1)
	errs := h.logged("Could not write the Event, dropping it")
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0].Err, errStopped)
	assert.Equal(t, "retrying", value(errs[0], "message"))
	flush := h.logged("Flush deadline passed, dropping the queued Events")
	require.Len(t, flush, 1)
	assert.Equal(t, 1, value(flush[0], "dropped"))
}

func TestContextEndStops(t *testing.T) {
	h := start(t, &fakeSink{}, nil)
	for i := range 3 {
		h.r.Eventf(pod("web-0"), corev1.EventTypeNormal, "N", "%d", i)
	}
	h.cancel()
	within(t, h.r.done, "the worker to stop")
	require.Len(t, h.sink.snapshot(), 3, "what was queued is flushed")

	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "late")
	h.stop(t)
	assert.Len(t, h.sink.snapshot(), 3)
}

func TestEventAfterStop(t *testing.T) {
	h := start(t, &fakeSink{}, nil)
	h.stop(t)
	h.stop(t) // idempotent
	require.NotPanics(t, func() {
		h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "late")
		h.r.Eventf(node("node-a"), corev1.EventTypeWarning, "N", "late %d", 2)
	})
	assert.Empty(t, h.sink.snapshot())
	assert.Len(t, h.logged("Recorder stopped, dropping the Event"), 2)
}

// TestConcurrentEventsAndStop is for the race detector: Events from many
// goroutines while the recorder stops.
func TestConcurrentEventsAndStop(t *testing.T) {
	h := start(t, &fakeSink{}, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				h.r.Eventf(pod(fmt.Sprintf("p-%d-%d", g, i%50)), corev1.EventTypeNormal, "N", "%d", i)
			}
		}()
	}
	h.sink.waitCalls(t, 1)
	h.stop(t)
	wg.Wait()
	n := len(h.sink.snapshot())
	assert.LessOrEqual(t, n, 8*200)
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "N", "late")
	assert.Len(t, h.sink.snapshot(), n, "nothing written after Stop")
}

func TestNamespaceTerminatingNotAnError(t *testing.T) {
	terminating := apierrors.NewForbidden(eventsGR, "x", errors.New("namespace team-a is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	sink := &fakeSink{createHook: func(context.Context, int, *corev1.Event) error { return terminating }}
	h := start(t, sink, nil)
	h.r.Event(pod("web-0"), corev1.EventTypeNormal, "Killing", "stopping container")
	h.stop(t)

	require.Len(t, h.sink.snapshot(), 1, "not retried")
	assert.Empty(t, h.logged("Could not write the Event, dropping it"))
	info := h.logged("Namespace terminating, dropping the Event")
	require.Len(t, info, 1)
	assert.Equal(t, 2, info[0].Verbosity)
}
