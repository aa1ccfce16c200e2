package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/process/healthz"
)

// informerPollInterval spaces the looks at whether informers have synced.
const informerPollInterval = 100 * time.Millisecond

// loop runs the enabled entries of a component list.
type loop struct {
	entries []entry
	// checks holds the /readyz check of each entry, nil where it has none.
	checks []*componentCheck
	poll   time.Duration
}

// newLoop keeps the entries that are on with e, in order, and makes their
// /readyz checks.
func newLoop(entries []entry, e *env) *loop {
	l := &loop{poll: informerPollInterval}
	for _, en := range entries {
		if en.on != nil && !en.on(e) {
			continue
		}
		var check *componentCheck
		if en.readyz {
			check = &componentCheck{name: en.name, starting: en.starting}
		}
		l.entries = append(l.entries, en)
		l.checks = append(l.checks, check)
	}
	return l
}

// readyz returns the entries' /readyz checks, in list order.
func (l *loop) readyz() []healthz.Checker {
	var out []healthz.Checker
	for _, c := range l.checks {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// member is one built component while the loop runs.
type member struct {
	entry
	*component
	check *componentCheck
	// synced is set once the loop has seen the component's informers
	// synced; waiting once it has said it waits for them.
	synced, waiting bool
	// cancel stops run; done is closed once run has returned. Both nil
	// until run starts.
	cancel context.CancelFunc
	done   chan struct{}
}

// firstError keeps the first error reported to it; safe for concurrent use.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// run builds the components in list order and starts their informers.
// Once a component's informers have synced it marks it synced for its
// /readyz check, starts its gate, and starts its run, or, if it is gated,
// does so once every gate has opened; components ready together start in
// list order. It runs until ctx ends or a component fails; then it stops the
// components one at a time in reverse list order, each after the one
// listed after it has returned, then the informers. It returns the first
// failure, or nil after a shutdown asked for by ctx, also while building.
func (l *loop) run(ctx context.Context, e *env) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	// What the loop starts outlives ctx: it is stopped in order, by stop.
	base := context.WithoutCancel(ctx)
	informersCtx, stopInformers := context.WithCancel(base)
	r := &loopRun{loop: l, logger: klog.FromContext(ctx), base: base, cancel: cancel, stopInformers: stopInformers}
	defer func() {
		r.stop()
		if err == nil {
			// A component may also fail while it stops.
			err = r.failure.get()
		}
	}()
	if err := r.build(ctx, e); err != nil {
		if ctx.Err() != nil {
			return nil // shutting down while a component was being built
		}
		return err
	}
	r.startInformers(informersCtx.Done())
	r.schedule(ctx)
	return nil // the first failure, if any, is returned once all has stopped
}

// loopRun is one run of a loop.
type loopRun struct {
	*loop
	logger klog.Logger
	// base parents the components' contexts: they are not cancelled with
	// the loop's, but one at a time by stop.
	base          context.Context
	cancel        context.CancelFunc
	stopInformers context.CancelFunc
	failure       firstError

	members   []*member
	informers wait.Group
	gates     sync.WaitGroup
}

// fail records err as the daemon's failure, unless there is an earlier one,
// and starts the shutdown.
func (r *loopRun) fail(err error) {
	r.failure.set(err)
	r.cancel()
}

// build builds the entries in list order.
func (r *loopRun) build(ctx context.Context, e *env) error {
	for i, en := range r.entries {
		c, err := en.build(ctx, e)
		if err != nil {
			return fmt.Errorf("starting component %q: %w", en.name, err)
		}
		if c == nil {
			return fmt.Errorf("starting component %q: it built nothing", en.name)
		}
		r.members = append(r.members, &member{entry: en, component: c, check: r.checks[i]})
		if r.checks[i] != nil {
			r.checks[i].built.Store(c)
		}
	}
	return nil
}

// startInformers runs every informer the components name, each once.
func (r *loopRun) startInformers(stop <-chan struct{}) {
	started := map[syncer]bool{}
	for _, m := range r.members {
		for _, inf := range m.informers {
			if !started[inf.syncer] {
				started[inf.syncer] = true
				r.informers.StartWithChannel(stop, inf.Run)
			}
		}
	}
}

// schedule starts each component when it may start (see run) and returns
// when ctx ends.
func (r *loopRun) schedule(ctx context.Context) {
	closedGates := 0
	for _, m := range r.members {
		if m.gate != nil {
			closedGates++
		}
	}
	gateDone := make(chan error, closedGates)
	pending := append([]*member(nil), r.members...)
	ticker := time.NewTicker(r.poll)
	defer ticker.Stop()
	for {
		rest := pending[:0]
		for _, m := range pending {
			if !m.synced && !r.markSynced(ctx, m, gateDone) {
				rest = append(rest, m)
				continue
			}
			switch {
			case m.run == nil:
			case m.gated && closedGates > 0:
				rest = append(rest, m)
			default:
				m.start(r.base, r.logger, r.fail)
			}
		}
		pending = rest
		tick := ticker.C
		if len(pending) == 0 {
			tick = nil
		}
		select {
		case <-ctx.Done():
			return
		case err := <-gateDone:
			if err != nil {
				if ctx.Err() == nil {
					r.fail(err)
				}
				continue
			}
			closedGates--
		case <-tick:
		}
	}
}

// markSynced reports whether m's informers have synced; the first time they
// have, it tells m's /readyz check and starts m's gate, which reports to
// gateDone.
func (r *loopRun) markSynced(ctx context.Context, m *member, gateDone chan<- error) bool {
	if names := unsynced(m.informers); len(names) > 0 {
		if !m.waiting {
			m.waiting = true
			r.logger.Info("Waiting for informers to sync", "component", m.name, "informers", names)
		}
		return false
	}
	m.synced = true
	if m.check != nil {
		m.check.synced.Store(true)
	}
	if m.gate != nil {
		r.gates.Add(1)
		go func() {
			defer r.gates.Done()
			err := m.gate(ctx)
			if err != nil {
				err = fmt.Errorf("component %q: %w", m.name, err)
			}
			gateDone <- err
		}()
	}
	return true
}

// stop ends the gates, then stops and closes the components one at a time
// in reverse list order, then stops the informers.
func (r *loopRun) stop() {
	r.cancel()
	r.gates.Wait()
	for i := len(r.members) - 1; i >= 0; i-- {
		r.members[i].stop(r.logger)
	}
	r.stopInformers()
	r.informers.Wait()
}

// start runs the component until its own context is cancelled by stop.
func (m *member) start(base context.Context, logger klog.Logger, fail func(error)) {
	ctx, cancel := context.WithCancel(base)
	m.cancel, m.done = cancel, make(chan struct{})
	logger.V(2).Info("Starting component", "component", m.name)
	go func() {
		defer close(m.done)
		err := m.run(ctx)
		switch {
		case err != nil:
			fail(fmt.Errorf("component %q failed: %w", m.name, err))
		case ctx.Err() == nil:
			logger.V(2).Info("Component has nothing more to do", "component", m.name)
		}
	}()
}

// stop cancels the component's run, waits for it to return, then closes
// the component.
func (m *member) stop(logger klog.Logger) {
	if m.done != nil {
		logger.V(2).Info("Stopping component", "component", m.name)
		m.cancel()
		<-m.done
	}
	if m.close != nil {
		m.close()
	}
}
