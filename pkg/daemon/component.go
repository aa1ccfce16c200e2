package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/nodekruise/kruise/pkg/process/healthz"
)

// entry is one part of kruise-daemon: the list in components.go names them
// all, and the loop (loop.go) builds, starts and stops them.
type entry struct {
	// name names the component in logs and errors, and its /readyz check.
	name string
	// on reports whether the component runs with env's clients and
	// settings; nil means always.
	on func(*env) bool
	// readyz adds a /readyz check called name (see componentCheck).
	readyz bool
	// starting is why that check fails until the component is built;
	// empty means "not started yet".
	starting string
	// gated marks a component that may only run once every gate has
	// opened: whatever acts on the node, or on the API for the node, waits
	// until no other node daemon runs here (the coexistence guard).
	gated bool
	// build makes the component. Entries are built one after the other,
	// in list order, before any informer starts; build may wait (for the
	// container runtime) and may use what earlier entries left in env. It
	// starts no goroutine: run does.
	build func(ctx context.Context, e *env) (*component, error)
}

// component is what an entry's build makes.
type component struct {
	// informers must have synced before run starts and before the /readyz
	// check passes. The loop starts each informer once, however many
	// components name it, after every component is built.
	informers []informer
	// check, if set, is the component's own readiness, asked once its
	// informers have synced. A server.Detailer adds its detail to
	// /readyz?verbose.
	check healthz.Checker
	// gate, if set, holds every gated component back until it returns
	// nil; it runs once the component's informers have synced. An error
	// stops the daemon.
	gate func(ctx context.Context) error
	// run, if set, runs until ctx ends. Returning nil earlier means the
	// component has nothing more to do; an error stops the daemon.
	run func(ctx context.Context) error
	// close, if set, releases what build acquired. It is called on
	// shutdown, in reverse list order, after run has returned.
	close func()
}

// informer is one informer a component reads, named for logs and /readyz.
type informer struct {
	name string
	syncer
}

// syncer is what the loop needs of an informer; cache.SharedIndexInformer
// has it.
type syncer interface {
	Run(stop <-chan struct{})
	HasSynced() bool
}

// unsynced names the informers that have not synced, in order.
func unsynced(informers []informer) []string {
	var names []string
	for _, inf := range informers {
		if !inf.HasSynced() {
			names = append(names, inf.name)
		}
	}
	return names
}

// componentCheck is the /readyz check of one entry. It exists before the
// component (the server listens while the runtime is awaited) and fails
// until the component is built, then until its informers have synced, then
// whenever the component's own check fails.
type componentCheck struct {
	name     string
	starting string
	built    atomic.Pointer[component]
	// synced is set by the loop when it has seen the informers synced, as
	// it starts the component's gate and run.
	synced atomic.Bool
}

// Name implements server.Checker.
func (k *componentCheck) Name() string { return k.name }

// Check implements server.Checker.
func (k *componentCheck) Check(req *http.Request) error {
	c := k.built.Load()
	if c == nil {
		if k.starting != "" {
			return errors.New(k.starting)
		}
		return errors.New("not started yet")
	}
	if !k.synced.Load() && len(c.informers) > 0 {
		names := unsynced(c.informers)
		if len(names) == 0 { // synced, and the loop is about to see it
			for _, inf := range c.informers {
				names = append(names, inf.name)
			}
		}
		return fmt.Errorf("informers have not synced: %s", strings.Join(names, ", "))
	}
	if c.check != nil {
		return c.check.Check(req)
	}
	return nil
}

// Detail implements server.Detailer with the component's own detail.
func (k *componentCheck) Detail() string {
	c := k.built.Load()
	if c == nil || c.check == nil {
		return ""
	}
	if d, ok := c.check.(healthz.Detailer); ok {
		return d.Detail()
	}
	return ""
}
