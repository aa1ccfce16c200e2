// Package recorder records core/v1 Events for kruise-daemon.
//
// It stands in for client-go's tools/record, whose import links
// apimachinery's strategicpatch and, through it, kube-openapi, gnostic, two
// YAML libraries and protobuf descriptors: about 1.5 MiB of resident memory
// the daemon (held under 30 MiB) cannot spare. Events look as record writes
// them: named <object>.<hex UnixNano>, in the object's namespace ("default"
// for cluster-scoped objects), with source {component, host} and the same
// reportingController/reportingInstance; repeats of an
// Event bump its count and lastTimestamp with a JSON merge patch.
//
// Event and Eventf never block: they build the Event and put it on a bounded
// queue, dropping it when the queue is full. A single worker goroutine takes
// Events off the queue, filters and correlates them and writes them through a
// Sink, so the correlation state needs no lock:
//
//   - spam filter: every involved object has a token bucket of 25 Events
//     refilled at one per 5 minutes (record's defaults); Events over it are
//     dropped.
//   - dedup: an Event identical to one written before (same source, involved
//     object, type, reason and message) patches that Event's count instead of
//     creating another. If that Event is gone (Events expire after an hour by
//     default), a new one is created that counts from 1: the occurrences the
//     old one counted went with it, and a count that disagreed with the new
//     Event's firstTimestamp would mislead.
//
// Unlike record there is no aggregation of similar Events (same reason,
// different messages) into one "(combined from similar events)" Event: the
// per-object spam filter alone bounds what one object can cost the API
// server, and a daemon that reports on its own node's pods and images makes
// few enough distinct messages that the extra cache is not worth its memory.
package recorder

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// EventRecorder is the part of client-go's record.EventRecorder the daemon uses; client-go's
// recorders (record.FakeRecorder in tests) implement it too.
type EventRecorder interface {
	Event(object runtime.Object, eventtype, reason, message string)
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Sink writes core/v1 Events (in the Event's own namespace).
type Sink interface {
	Create(ctx context.Context, event *corev1.Event) (*corev1.Event, error)
	// Patch applies a JSON merge patch (types.MergePatchType) to the Event namespace/name.
	Patch(ctx context.Context, namespace, name string, data []byte) (*corev1.Event, error)
}

// Options configures a Recorder.
type Options struct {
	// Sink writes the Events; required. It must honour its ctx: that is what
	// bounds how long Stop waits for a request in flight.
	Sink Sink
	// Scheme knows the kinds Events are recorded on, for the involved object's
	// kind and apiVersion (objects carrying their own TypeMeta need no Scheme).
	Scheme *runtime.Scheme
	// Component is source.component.
	Component string
	// Host is source.host: the node name.
	Host string
	// Clock stamps the Events and paces retries; nil means the real clock.
	Clock clock.Clock

	// Test knobs; zero means the default.
	queueSize      int
	retryInterval  time.Duration
	requestTimeout time.Duration
	flushTimeout   time.Duration
}

const (
	defaultQueueSize = 1000
	// Retries follow record: 12 attempts in all, 10 s apart.
	defaultMaxAttempts   = 12
	defaultRetryInterval = 10 * time.Second
	// defaultRequestTimeout bounds one Create or Patch.
	defaultRequestTimeout = 10 * time.Second
	// defaultFlushTimeout bounds how long, from the moment it is asked to
	// stop, the recorder keeps writing what is queued. It is measured on the
	// real clock whatever Options.Clock is, so a stalled fake clock in a test
	// cannot hang Stop.
	defaultFlushTimeout = 5 * time.Second
	// dropLogInterval spaces the errors logged for a full queue: when the
	// queue is full, Events come faster than they can be written and a line
	// for each would flood the log too.
	dropLogInterval = time.Second
)

// Recorder records Events; see the package comment. Its methods are safe for
// concurrent use.
type Recorder struct {
	logger         klog.Logger
	sink           Sink
	scheme         *runtime.Scheme
	source         corev1.EventSource
	clock          clock.Clock
	maxAttempts    int
	retryInterval  time.Duration
	requestTimeout time.Duration
	flushTimeout   time.Duration

	queue chan *corev1.Event

	// mu orders enqueues against shutdown: Event holds it shared while it
	// checks stopped and sends, shutdown exclusively while it sets stopped.
	// Once shutdown has set it nothing more enters the queue, so the worker's
	// final drain sees every Event that was accepted. (The queue is never
	// closed, so a late Event cannot panic on a closed channel.)
	mu      sync.RWMutex
	stopped bool

	stopOnce     sync.Once
	stopping     chan struct{}      // closed by shutdown
	done         chan struct{}      // closed when the worker has returned
	cancelWrites context.CancelFunc // ends the worker's requests and waits
	unwatch      func() bool        // unregisters shutdown from New's ctx

	// Queue-full drops since the last error logged about them, and when
	// (UnixNano on Options.Clock) that was.
	dropped     atomic.Int64
	lastDropLog atomic.Int64

	corr *correlator // the worker's alone
}

var _ EventRecorder = (*Recorder)(nil)

// New starts a recorder. ctx carries the logger (klog.FromContext); when it
// ends, the recorder stops as if Stop were called. Stop it to flush what is
// queued.
func New(ctx context.Context, o Options) *Recorder {
	r := &Recorder{
		logger:         klog.FromContext(ctx),
		sink:           o.Sink,
		scheme:         o.Scheme,
		source:         corev1.EventSource{Component: o.Component, Host: o.Host},
		clock:          o.Clock,
		maxAttempts:    defaultMaxAttempts,
		retryInterval:  orDefault(o.retryInterval, defaultRetryInterval),
		requestTimeout: orDefault(o.requestTimeout, defaultRequestTimeout),
		flushTimeout:   orDefault(o.flushTimeout, defaultFlushTimeout),
		queue:          make(chan *corev1.Event, orDefault(o.queueSize, defaultQueueSize)),
		stopping:       make(chan struct{}),
		done:           make(chan struct{}),
		corr:           newCorrelator(),
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	// The worker's writes outlive ctx by up to flushTimeout (the flush), so
	// they run under a context of their own that keeps ctx's values.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancelWrites = cancel
	r.unwatch = context.AfterFunc(ctx, r.shutdown)
	go r.run(wctx)
	return r
}

func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Event records an Event about object. It never blocks.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.record(object, eventtype, reason, message)
}

// Eventf is Event with a message formatted by fmt.Sprintf.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.record(object, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// Stop stops taking Events, writes those queued (for at most the flush
// timeout, 5 s, after which queued Events and pending retries are given up)
// and returns when the worker is done. Later calls return at once.
func (r *Recorder) Stop() {
	r.shutdown()
	<-r.done
}

// shutdown stops taking Events and starts the flush deadline; it runs once,
// from Stop or when New's ctx ends.
func (r *Recorder) shutdown() {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		r.stopped = true
		r.mu.Unlock()
		time.AfterFunc(r.flushTimeout, r.cancelWrites)
		close(r.stopping)
	})
}

func (r *Recorder) record(object runtime.Object, eventtype, reason, message string) {
	// Only these two are valid for core/v1 Events; the API server would
	// refuse anything else anyway.
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		r.logger.Error(nil, "Unsupported Event type, dropping the Event",
			"type", eventtype, "reason", reason, "message", message)
		return
	}
	ref, err := r.reference(object)
	if err != nil {
		r.logger.Error(err, "Could not make a reference to the object, dropping the Event",
			"objectType", fmt.Sprintf("%T", object), "type", eventtype, "reason", reason, "message", message)
		return
	}
	e := r.makeEvent(ref, eventtype, reason, message)
	// The shape of record's StartStructuredLogging, so log queries keep working.
	r.logger.V(4).Info("Event occurred", "object", klog.KRef(ref.Namespace, ref.Name),
		"kind", ref.Kind, "apiVersion", ref.APIVersion, "type", eventtype, "reason", reason, "message", message)
	r.enqueue(e)
}

// reference is reference.GetReference, made safe: a typed nil such as
// (*corev1.Pod)(nil) passes its nil check and is then dereferenced, and a
// recorder must not take its caller down over a bad argument.
func (r *Recorder) reference(object runtime.Object) (ref *corev1.ObjectReference, err error) {
	defer func() {
		if p := recover(); p != nil {
			ref, err = nil, fmt.Errorf("referencing a %T: %v", object, p)
		}
	}()
	return reference.GetReference(r.scheme, object)
}

// makeEvent builds the Event as record does for core/v1 Events. It leaves
// reportingController, reportingInstance and eventTime unset.
func (r *Recorder) makeEvent(ref *corev1.ObjectReference, eventtype, reason, message string) *corev1.Event {
	now := metav1.NewTime(r.clock.Now())
	namespace := ref.Namespace
	if namespace == "" {
		// A cluster-scoped object's Events live in "default".
		namespace = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// Unique enough for one object, and sorts by time.
			Name:      fmt.Sprintf("%v.%x", ref.Name, now.UnixNano()),
			Namespace: namespace,
		},
		InvolvedObject: *ref,
		Reason:         reason,
		Message:        message,
		Type:           eventtype,
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Source:         r.source,
		// As client-go's recorder sets them: who reports, from which node.
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
}

// enqueue hands e to the worker without blocking.
func (r *Recorder) enqueue(e *corev1.Event) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.stopped {
		r.logger.V(4).Info("Recorder stopped, dropping the Event", eventKV(e)...)
		return
	}
	select {
	case r.queue <- e:
	default:
		r.droppedFull(e)
	}
}

// droppedFull counts an Event dropped on a full queue and logs the count at
// most once every dropLogInterval.
func (r *Recorder) droppedFull(e *corev1.Event) {
	r.dropped.Add(1)
	now := r.clock.Now().UnixNano()
	last := r.lastDropLog.Load()
	if last != 0 && now-last < int64(dropLogInterval) {
		return
	}
	if !r.lastDropLog.CompareAndSwap(last, now) {
		return // another caller logs this round
	}
	n := r.dropped.Swap(0)
	r.logger.Error(nil, "Event queue full, dropping Events",
		append([]any{"dropped", n, "queueSize", cap(r.queue)}, eventKV(e)...)...)
}

// eventKV describes e for the log.
func eventKV(e *corev1.Event) []any {
	return []any{
		"object", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name),
		"kind", e.InvolvedObject.Kind, "type", e.Type, "reason", e.Reason, "message", e.Message,
	}
}
