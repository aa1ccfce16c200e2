package crrexec

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// work is the in-flight execution of one CRR: the context every preStop
// hook and StopContainer of it runs under, and when each kill began.
type work struct {
	ctx    context.Context
	cancel context.CancelFunc
	// kill is the one kill of this CRR under way, or finished and not yet
	// taken by a sync (see kill_async.go); nil when there is none.
	killMu sync.Mutex
	kill   *asyncKill
	// killStarted is when the kill of each container began, for the
	// recreate duration metric. It is lost with the daemon: a CRR finished
	// after a restart is not timed.
	killStarted map[string]time.Time
	// killed are the containers this work stopped. isKilled is recorded
	// from it again when the write that first recorded it failed (the API
	// server unreachable, say): the next sync cannot tell from the runtime
	// whether the new instance is the daemon's doing. Lost with the daemon.
	killed map[string]bool
}

// workFor returns the work of a CRR, starting it if needed.
func (e *Executor) workFor(uid types.UID) *work {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w, ok := e.inflight[string(uid)]; ok {
		return w
	}
	ctx, cancel := context.WithCancel(e.baseCtx)
	w := &work{ctx: ctx, cancel: cancel, killStarted: map[string]time.Time{}, killed: map[string]bool{}}
	e.inflight[string(uid)] = w
	return w
}

// cancel stops the work of a CRR that was completed by someone else or
// left the cache: no preStop hook or StopContainer starts any more, a hook
// in progress returns at once.
func (e *Executor) cancel(uid types.UID, why string) {
	e.mu.Lock()
	w, ok := e.inflight[string(uid)]
	delete(e.inflight, string(uid))
	delete(e.warned, string(uid))
	e.mu.Unlock()
	if !ok {
		return
	}
	w.cancel()
	e.metrics.completed.WithLabelValues(outcomeCancelled).Inc()
	e.baseLogger().V(2).Info("Cancelled CRR work", "crrUID", uid, "why", why)
}

// finished forgets the work of a CRR this executor completed itself.
func (e *Executor) finished(uid types.UID) {
	e.mu.Lock()
	w, ok := e.inflight[string(uid)]
	delete(e.inflight, string(uid))
	delete(e.warned, string(uid))
	e.mu.Unlock()
	if ok {
		w.cancel()
	}
}

// warnOnce reports whether the UnreadyGateMissing Event is still to be recorded
// for this CRR, and marks it recorded.
func (e *Executor) warnOnce(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.warned[string(uid)] {
		return false
	}
	e.warned[string(uid)] = true
	return true
}

func (e *Executor) baseLogger() klog.Logger {
	e.mu.Lock()
	defer e.mu.Unlock()
	return klog.FromContext(e.baseCtx)
}
