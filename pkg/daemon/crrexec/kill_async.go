package crrexec

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// A kill (preStop hook, then StopContainer) can take a pod's whole grace
// period. It runs in a goroutine of its own, not in the worker that started
// it: a few pods with long grace periods would otherwise hold every worker
// and stall every other CRR on the node, sidecar terminations included. A
// CRR has at most one kill under way (its containers are stopped one after
// another, as failurePolicy Fail needs); the worker that finds it finished
// takes its result and carries on, and its end queues the pod again.

// asyncKill is one container's kill.
type asyncKill struct {
	container string
	done      bool
	err       error
}

// startKill runs kill for container in the background, under the work's
// context, and queues key when it has returned.
func (e *Executor) startKill(w *work, key, container string, kill func() error) {
	k := &asyncKill{container: container}
	w.killMu.Lock()
	w.kill = k
	w.killMu.Unlock()
	e.killsStarted.Add(1)
	e.kills.Add(1)
	go func() {
		defer e.kills.Done()
		defer runtime.HandleCrashWithContext(w.ctx)
		err := kill()
		w.killMu.Lock()
		k.done, k.err = true, err
		w.killMu.Unlock()
		e.queue.Add(key)
	}()
}

// killState says whether container's kill is under way, and, once it has
// finished, takes its result (taken reports that there was one).
func (w *work) killState(container string) (running, taken bool, err error) {
	w.killMu.Lock()
	defer w.killMu.Unlock()
	k := w.kill
	switch {
	case k == nil || k.container != container:
		return false, false, nil
	case !k.done:
		return true, false, nil
	default:
		w.kill = nil
		return false, true, k.err
	}
}

// busy reports whether the CRR has a kill under way, or one whose result no
// sync has taken yet: another may not start before.
func (w *work) busy() bool {
	w.killMu.Lock()
	defer w.killMu.Unlock()
	return w.kill != nil
}

// waitKills waits for every kill goroutine to return; Run calls it on
// shutdown, once their contexts are cancelled, so nothing outlives it.
func (e *Executor) waitKills() {
	e.kills.Wait()
}

// killDone turns the result of a finished kill of ctr into the next step.
func killDone(ctx context.Context, ctr string, err error) decision {
	switch {
	case err == nil:
		return decision{action: actKilled}
	case errors.Is(err, errCancelled):
		klog.FromContext(ctx).Info("CRR work cancelled", "container", ctr, "reason", err.Error())
		return decision{action: actCancelled}
	case runtimeGone(err):
		return decision{action: actRuntimeGone}
	default:
		return decision{action: actFail, reason: err.Error()}
	}
}
