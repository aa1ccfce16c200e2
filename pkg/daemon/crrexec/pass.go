package crrexec

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// pass is one sync's walk over a CRR's containers, in spec order: each
// unfinished one is decided on and acted on until one must be waited for.
type pass struct {
	e          *Executor
	ctx        context.Context
	wctx       context.Context // the work's context, under which kills run
	logger     klog.Logger
	w          *work
	crr        *appsv1alpha1.ContainerRecreateRequest
	pod        *corev1.Pod
	s          *statusWriter
	strategy   appsv1alpha1.ContainerRecreateRequestStrategy
	containers []cri.Container
	key        string // the pod's queue key
	// started: a kill of the request has begun (only the first waits for
	// the unready grace).
	started bool
	// after: when a waiting container wants looking at again (0: on the
	// next event).
	after time.Duration
}

// halt is how a sync ends before its pass is through.
type halt struct {
	after time.Duration
	err   error
}

func (p *pass) failFast() bool {
	return p.strategy.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore
}

// walk steps through the unfinished containers until one holds the rest
// back (a kill of this CRR under way, or orderedRecreate and a container
// not done yet), or one failed under failurePolicy Fail. A non-nil halt
// ends the sync with its result.
func (p *pass) walk() *halt {
	for _, ctr := range p.crr.Spec.Containers {
		st := p.s.state(ctr.Name)
		if finalPhase(st.Phase) {
			continue
		}
		more, h := p.step(ctr, st)
		if h != nil {
			return h
		}
		if !more {
			break
		}
	}
	return nil
}

// step decides on one unfinished container and acts on it. more says
// whether later containers are looked at in this pass.
func (p *pass) step(ctr appsv1alpha1.ContainerRecreateRequestContainer, st appsv1alpha1.ContainerRecreateRequestContainerRecreateState) (more bool, h *halt) {
	var d decision
	running, taken, killErr := p.w.killState(ctr.Name)
	switch {
	case running:
		return false, nil
	case taken:
		d = killDone(p.ctx, ctr.Name, killErr)
	default:
		d = decide(ctr, st, p.strategy, p.pod, p.containers, p.e.clock.Now())
	}
	switch d.action {
	case actKill:
		return false, p.kill(ctr, st, d.id)
	case actCancelled:
		return false, &halt{}
	case actRuntimeGone:
		// The runtime went away during the stop: not the container's
		// fault. The container stays Recreating; once the runtime
		// answers, the next sync stops the same instance again (its
		// preStop hook runs again too) or finds it already recreated.
		return false, &halt{err: p.e.runtimeUnavailable(p.ctx, p.s, fmt.Errorf("stopping container %s: %w", ctr.Name, killErr), killErr)}
	case actKilled:
		p.w.killed[ctr.Name] = true
		st.IsKilled = true
		if err := p.record(st); err != nil {
			return false, &halt{err: err}
		}
		return !p.strategy.OrderedRecreate, nil
	case actWait:
		p.after = sooner(p.after, d.after)
		return !p.strategy.OrderedRecreate, nil
	case actSucceed:
		st.Phase, st.Message = appsv1alpha1.ContainerRecreateRequestSucceeded, ""
		p.s.set(st)
		if started, ok := p.w.killStarted[ctr.Name]; ok {
			p.e.metrics.duration.Observe(p.e.clock.Since(started).Seconds())
		}
		p.logger.Info("Container recreated", "container", ctr.Name)
		return true, nil
	}
	// actFail
	p.logger.Info("Container could not be recreated", "container", ctr.Name, "reason", d.reason)
	st.Phase, st.Message = appsv1alpha1.ContainerRecreateRequestFailed, d.reason
	p.s.set(st)
	return !p.failFast(), nil
}

// kill starts the stop of instance id of ctr in the background, once no
// other kill of the CRR is under way and the first kill's unready grace has
// passed. Nothing later in the pass is looked at either way.
func (p *pass) kill(ctr appsv1alpha1.ContainerRecreateRequestContainer, st appsv1alpha1.ContainerRecreateRequestContainerRecreateState, id string) *halt {
	if p.w.busy() {
		return nil
	}
	if !p.started {
		if wait, ok := p.e.unreadyWait(p.s.cur(), p.pod, p.logger); ok {
			return &halt{after: sooner(wait, p.after), err: p.s.flush(p.ctx)}
		}
		p.started = true
	}
	if !p.e.stillActive(p.crr) {
		// Completed or gone since this sync began: the handler
		// cancels; nothing more starts.
		p.e.cancel(p.crr.UID, "no longer active")
		return &halt{}
	}
	if st.Phase != appsv1alpha1.ContainerRecreateRequestRecreating {
		st.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
		if err := p.record(st); err != nil {
			return &halt{err: err}
		}
	}
	p.w.killStarted[ctr.Name] = p.e.clock.Now()
	cur, wctx, pod, strategy := p.s.cur(), p.wctx, p.pod, p.strategy
	p.e.startKill(p.w, p.key, ctr.Name, func() error { return p.e.kill(wctx, cur, pod, ctr, strategy, id) })
	return nil
}

// record sets the container's state and writes it at once.
func (p *pass) record(st appsv1alpha1.ContainerRecreateRequestContainerRecreateState) error {
	p.s.set(st)
	return p.s.flush(p.ctx)
}

// sooner is the earlier of two look-again delays, zero meaning none (only
// the next event): a waiting container must not push back another's.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
