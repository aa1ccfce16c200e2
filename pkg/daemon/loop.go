package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/server"
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
func (l *loop) readyz() []server.Checker {
	var out []server.Checker
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
	// cancel stops run; done is closed once run has returned. Both nil
	// until run starts.
	cancel context.CancelFunc
	done   chan struct{}
}

// firstError keeps the first error reported to it.
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

// run builds the components in list order, starts their informers, then
// starts each component as soon as its informers have synced (and, if it
// is gated, once every gate has opened), in list order among those ready
// together. It runs until ctx ends or a component fails; then it stops the
// components one at a time in reverse list order, each after the one
// listed after it has returned, then the informers. It returns the first
// failure, or nil after a shutdown asked for by ctx, also while building.
func (l *loop) run(ctx context.Context, e *env) (err error) {
	logger := klog.FromContext(ctx)
	// What the loop starts outlives ctx: it is stopped below, in order.
	base := context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failure firstError
	fail := func(err error) {
		failure.set(err)
		cancel()
	}

	members := make([]*member, 0, len(l.entries))
	var informers wait.Group
	informersCtx, stopInformers := context.WithCancel(base)
	var gates sync.WaitGroup
	defer func() {
		cancel()
		gates.Wait()
		for i := len(members) - 1; i >= 0; i-- {
			members[i].stop(logger)
		}
		stopInformers()
		informers.Wait()
		if err == nil {
			// A component may also fail while it stops.
			err = failure.get()
		}
	}()

	for i, en := range l.entries {
		c, err := en.build(ctx, e)
		if err != nil {
			if ctx.Err() != nil {
				return nil // shutting down while it waited
			}
			return fmt.Errorf("starting component %q: %w", en.name, err)
		}
		if c == nil {
			return fmt.Errorf("starting component %q: it built nothing", en.name)
		}
		members = append(members, &member{entry: en, component: c})
		if l.checks[i] != nil {
			l.checks[i].built.Store(c)
		}
	}

	started := map[syncer]bool{}
	for _, m := range members {
		for _, inf := range m.informers {
			if !started[inf.syncer] {
				started[inf.syncer] = true
				informers.StartWithChannel(informersCtx.Done(), inf.Run)
			}
		}
	}

	openGates := 0
	gateDone := make(chan error, len(members))
	for _, m := range members {
		if m.gate == nil {
			continue
		}
		openGates++
		gates.Add(1)
		go func() {
			defer gates.Done()
			err := m.gate(ctx)
			if err != nil {
				err = fmt.Errorf("component %q: %w", m.name, err)
			}
			gateDone <- err
		}()
	}

	var pending []*member
	for _, m := range members {
		if m.run != nil {
			pending = append(pending, m)
		}
	}
	waiting := map[*member]bool{}
	ticker := time.NewTicker(l.poll)
	defer ticker.Stop()
	for {
		rest := pending[:0]
		for _, m := range pending {
			switch {
			case len(unsynced(m.informers)) > 0:
				if !waiting[m] {
					waiting[m] = true
					logger.Info("Waiting for informers to sync", "component", m.name, "informers", unsynced(m.informers))
				}
				rest = append(rest, m)
			case m.gated && openGates > 0:
				rest = append(rest, m)
			default:
				m.start(base, logger, fail)
			}
		}
		pending = rest
		tick := ticker.C
		if len(pending) == 0 {
			tick = nil
		}
		select {
		case <-ctx.Done():
			return nil // the first failure, if any, is returned once all has stopped
		case err := <-gateDone:
			if err != nil {
				if ctx.Err() == nil {
					fail(err)
				}
				continue
			}
			openGates--
		case <-tick:
		}
	}
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
