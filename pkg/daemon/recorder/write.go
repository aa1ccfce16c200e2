package recorder

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodekruise/kruise/pkg/process/durations"
)

// errStopped ends the retries of an Event when the flush deadline passes.
var errStopped = errors.New("recorder stopped before the Event could be written")

// run is the worker: it writes queued Events one at a time until shutdown,
// then flushes the queue. ctx is cancelled at the flush deadline.
func (r *Recorder) run(ctx context.Context) {
	defer close(r.done)
	defer r.cancelWrites()
	defer r.unwatch()
	for {
		// Once stopping, only drain writes, so that the flush deadline is
		// enforced on every Event left (select picks among ready cases at
		// random and would otherwise sometimes take one more from the queue).
		select {
		case <-r.stopping:
			r.drain(ctx)
			return
		default:
		}
		select {
		case e := <-r.queue:
			r.process(ctx, e)
		case <-r.stopping:
			r.drain(ctx)
			return
		}
	}
}

// drain writes what is left in the queue, until the flush deadline. No
// Event enters the queue any more (shutdown has set stopped), so it ends.
func (r *Recorder) drain(ctx context.Context) {
	for {
		select {
		case e := <-r.queue:
			if ctx.Err() != nil {
				// One line for the lot rather than one failure each.
				r.logger.Error(ctx.Err(), "Flush deadline passed, dropping the queued Events",
					"dropped", 1+len(r.queue))
				return
			}
			r.process(ctx, e)
		default:
			return
		}
	}
}

// process filters, correlates and writes one Event.
func (r *Recorder) process(ctx context.Context, e *corev1.Event) {
	if !r.corr.allow(e) {
		r.logger.V(2).Info("Too many Events about the object, dropping the Event", eventKV(e)...)
		return
	}
	k := contentKey(e)
	prev, repeat := r.corr.previous(k)
	w, err := r.send(ctx, e, prev, repeat)
	if err != nil {
		r.corr.forget(k)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// Expected while a namespace is deleted with pods still in it.
			r.logger.V(2).Info("Namespace terminating, dropping the Event", append(eventKV(e), "err", err)...)
			return
		}
		r.logger.Error(err, "Could not write the Event, dropping it", eventKV(e)...)
		return
	}
	r.corr.remember(k, w)
}

// send writes e: as a count bump of prev when repeat, else (or when prev is
// gone) as a new Event. Transient failures are retried, up to maxAttempts in
// all, retryInterval apart; the waits end early when ctx does.
func (r *Recorder) send(ctx context.Context, e *corev1.Event, prev written, repeat bool) (written, error) {
	for attempt := 1; ; attempt++ {
		var w written
		var err error
		if repeat {
			w, err = r.patch(ctx, e, prev)
			if apierrors.IsNotFound(err) {
				// The Event we counted on expired or was deleted: start a new
				// one (see the package comment for why it counts from 1). Later
				// attempts create too.
				repeat = false
				r.logger.V(4).Info("Event to update is gone, creating a new one",
					append(eventKV(e), "previous", prev.namespace+"/"+prev.name)...)
			}
		}
		if !repeat {
			w, err = r.create(ctx, e)
		}
		if err == nil {
			return w, nil
		}
		if !retryable(err) {
			return written{}, err
		}
		if attempt >= r.maxAttempts {
			return written{}, fmt.Errorf("giving up after %d attempts: %w", attempt, err)
		}
		r.logger.V(4).Info("Could not write the Event, will retry",
			append(eventKV(e), "attempt", attempt, "err", err)...)
		if !r.wait(ctx, r.retryDelay(attempt)) {
			return written{}, fmt.Errorf("%w (after %d attempts): %w", errStopped, attempt, err)
		}
	}
}

func (r *Recorder) create(ctx context.Context, e *corev1.Event) (written, error) {
	rctx, cancel := context.WithTimeout(ctx, r.requestTimeout)
	defer cancel()
	if _, err := r.sink.Create(rctx, e); err != nil {
		return written{}, fmt.Errorf("creating Event %s/%s: %w", e.Namespace, e.Name, err)
	}
	return written{namespace: e.Namespace, name: e.Name, count: 1}, nil
}

// patch counts e as one more occurrence of the Event prev.
func (r *Recorder) patch(ctx context.Context, e *corev1.Event, prev written) (written, error) {
	count := prev.count + 1
	// A merge patch of the two fields a repeat changes. metav1.Time encodes
	// as RFC 3339 in UTC, to the second; so does this.
	data := fmt.Appendf(nil, `{"count":%d,"lastTimestamp":%q}`,
		count, e.LastTimestamp.UTC().Format(time.RFC3339))
	rctx, cancel := context.WithTimeout(ctx, r.requestTimeout)
	defer cancel()
	if _, err := r.sink.Patch(rctx, prev.namespace, prev.name, data); err != nil {
		return written{}, fmt.Errorf("patching Event %s/%s: %w", prev.namespace, prev.name, err)
	}
	return written{namespace: prev.namespace, name: prev.name, count: count}, nil
}

// retryable tells the failures a retry may cure (the API server unreachable,
// overloaded or timing out) from the answers it will only repeat.
func retryable(err error) bool {
	switch {
	case apierrors.IsAlreadyExists(err), apierrors.IsInvalid(err),
		apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
		return false
	case apierrors.IsNotFound(err):
		// Left after a patch's NotFound turned into a create: the namespace
		// does not exist, and retrying will not make it.
		return false
	}
	return true
}

// retryDelay is the wait before attempt+1. The first is spread over the
// second half of the interval so that daemons which all failed at once (the
// API server restarting) do not all come back at once.
func (r *Recorder) retryDelay(attempt int) time.Duration {
	if attempt == 1 {
		half := r.retryInterval / 2
		return half + rand.N(half+1)
	}
	return r.retryInterval
}

// wait waits d on the recorder's clock; false if ctx ended first.
func (r *Recorder) wait(ctx context.Context, d time.Duration) bool {
	return durations.Sleep(ctx, r.clock, d)
}
