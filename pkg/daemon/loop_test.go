package daemon

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/process/healthz"
)

// journal records what the fakes did, in order.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.events...)
}

func (j *journal) has(e string) bool {
	for _, got := range j.list() {
		if got == e {
			return true
		}
	}
	return false
}

// fakeInformer syncs when the test says so and journals when it stops.
type fakeInformer struct {
	name   string
	j      *journal
	synced atomic.Bool
	runs   atomic.Int32
}

func (f *fakeInformer) Run(stop <-chan struct{}) {
	f.runs.Add(1)
	<-stop
	f.j.add("informer " + f.name + " stopped")
}

func (f *fakeInformer) HasSynced() bool { return f.synced.Load() }

func syncedInformer(name string, j *journal) *fakeInformer {
	f := &fakeInformer{name: name, j: j}
	f.synced.Store(true)
	return f
}

// fakeEntry is a component that journals its build, run and close; its run
// blocks until its context ends.
func fakeEntry(name string, j *journal, informers ...*fakeInformer) entry {
	return entry{name: name, readyz: true, build: func(context.Context, *env) (*component, error) {
		j.add("build " + name)
		c := &component{
			run: func(ctx context.Context) error {
				j.add("run " + name)
				<-ctx.Done()
				j.add("stop " + name)
				return nil
			},
			close: func() { j.add("close " + name) },
		}
		for _, inf := range informers {
			c.informers = append(c.informers, informer{name: inf.name, syncer: inf})
		}
		return c, nil
	}}
}

// runningLoop is a loop run in the background with a buffered test logger.
type runningLoop struct {
	l      *loop
	logger klog.Logger
	cancel context.CancelFunc
	done   chan error
}

func startLoop(t *testing.T, entries ...entry) *runningLoop {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	l := newLoop(entries, &env{})
	l.poll = 5 * time.Millisecond
	r := &runningLoop{l: l, logger: logger, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- l.run(ctx, &env{}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("the loop did not stop")
		}
	})
	return r
}

// stop cancels the loop and returns what it returned.
func (r *runningLoop) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for Cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not stop")
		return nil
	}
}

// result waits for the loop to return on its own.
func (r *runningLoop) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not return")
		return nil
	}
}

// started lists the components in the order the loop started them.
func (r *runningLoop) started() []string {
	var out []string
	for _, e := range r.logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if e.Message != "Starting component" {
			continue
		}
		for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
			if e.ParameterKVList[i] == "component" {
				out = append(out, e.ParameterKVList[i+1].(string))
			}
		}
	}
	return out
}

func (r *runningLoop) check(name string) error {
	for _, c := range r.l.readyz() {
		if c.Name() == name {
			return c.Check(&http.Request{})
		}
	}
	return errors.New("no check " + name)
}

func waitJournal(t *testing.T, j *journal, events ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, e := range events {
			if !j.has(e) {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "waiting for %v; journal: %v", events, j.list())
}

func TestLoopBuildsAndStartsInListOrder(t *testing.T) {
	j := &journal{}
	r := startLoop(t, fakeEntry("a", j), fakeEntry("b", j, syncedInformer("things", j)), fakeEntry("c", j))
	waitJournal(t, j, "run a", "run b", "run c")
	assert.Equal(t, []string{"build a", "build b", "build c"}, j.list()[:3], "built one after the other, in list order")
	assert.Equal(t, []string{"a", "b", "c"}, r.started())
	for _, name := range []string{"a", "b", "c"} {
		assert.NoError(t, r.check(name))
	}
	require.NoError(t, r.stop(t))
}

func TestLoopStopsInReverseOrderThenTheInformers(t *testing.T) {
	j := &journal{}
	shared := syncedInformer("pods", j)
	r := startLoop(t, fakeEntry("a", j, shared), fakeEntry("b", j), fakeEntry("c", j, shared))
	waitJournal(t, j, "run a", "run b", "run c")
	require.NoError(t, r.stop(t))

	events := j.list()
	assert.Equal(t, []string{"stop c", "close c", "stop b", "close b", "stop a", "close a", "informer pods stopped"}, events[len(events)-7:],
		"each component stops and closes after the one listed after it, the informers last")
	assert.Equal(t, int32(1), shared.runs.Load(), "an informer two components read runs once")
}

func TestLoopStartsEachComponentOnceItsInformersHaveSynced(t *testing.T) {
	j := &journal{}
	late := &fakeInformer{name: "nodeimages", j: j}
	r := startLoop(t, fakeEntry("a", j, late), fakeEntry("b", j, syncedInformer("pods", j)))

	// b does not wait for a: a component waits for its own informers only.
	waitJournal(t, j, "run b")
	assert.False(t, j.has("run a"))
	assert.EqualError(t, r.check("a"), "informers have not synced: nodeimages")
	assert.NoError(t, r.check("b"))

	late.synced.Store(true)
	waitJournal(t, j, "run a")
	assert.NoError(t, r.check("a"))
	assert.Equal(t, []string{"b", "a"}, r.started())
	require.NoError(t, r.stop(t))
}

func TestLoopComponentWhoseInformersNeverSync(t *testing.T) {
	j := &journal{}
	never := &fakeInformer{name: "containerrecreaterequests", j: j}
	r := startLoop(t, fakeEntry("crr", j, syncedInformer("pods", j), never), fakeEntry("imagepull", j))
	waitJournal(t, j, "run imagepull")
	require.Never(t, func() bool { return j.has("run crr") }, 50*time.Millisecond, 5*time.Millisecond)
	assert.EqualError(t, r.check("crr"), "informers have not synced: containerrecreaterequests")

	// Shutdown does not wait for it either.
	require.NoError(t, r.stop(t))
	assert.True(t, j.has("close crr"))
	assert.False(t, j.has("stop crr"), "never started, so never stopped")
}

func TestLoopGatedComponentsWaitForEveryGate(t *testing.T) {
	j := &journal{}
	open := make(chan struct{})
	guard := fakeEntry("coexistence", j)
	guard.gated = true
	build := guard.build
	guard.build = func(ctx context.Context, e *env) (*component, error) {
		c, err := build(ctx, e)
		c.gate = func(ctx context.Context) error {
			select {
			case <-open:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return c, err
	}
	crr := fakeEntry("crr", j)
	crr.gated = true
	r := startLoop(t, fakeEntry("node", j), guard, crr)

	waitJournal(t, j, "run node")
	require.Never(t, func() bool { return j.has("run coexistence") || j.has("run crr") }, 50*time.Millisecond, 5*time.Millisecond,
		"gated components wait for the gate")
	close(open)
	waitJournal(t, j, "run coexistence", "run crr")
	assert.Equal(t, []string{"node", "coexistence", "crr"}, r.started())
	require.NoError(t, r.stop(t))
}

func TestLoopFailingGateStopsTheDaemon(t *testing.T) {
	j := &journal{}
	g := fakeEntry("coexistence", j)
	build := g.build
	g.build = func(ctx context.Context, e *env) (*component, error) {
		c, err := build(ctx, e)
		c.gate = func(context.Context) error { return errors.New("Watch was not called") }
		return c, err
	}
	r := startLoop(t, g)
	assert.EqualError(t, r.result(t), `component "coexistence": Watch was not called`)
}

func TestLoopOneFailingComponentStopsTheOthers(t *testing.T) {
	j := &journal{}
	boom := errors.New("boom")
	failAt := make(chan struct{})
	b := fakeEntry("b", j)
	b.build = func(context.Context, *env) (*component, error) {
		return &component{
			run: func(ctx context.Context) error {
				j.add("run b")
				<-failAt
				return boom
			},
			close: func() { j.add("close b") },
		}, nil
	}
	done := fakeEntry("done", j)
	done.build = func(context.Context, *env) (*component, error) {
		return &component{run: func(context.Context) error { j.add("run done"); return nil }}, nil
	}
	r := startLoop(t, fakeEntry("a", j), done, b, fakeEntry("c", j))
	waitJournal(t, j, "run a", "run b", "run c", "run done")
	// A component that returns nil has nothing more to do: the others keep running.
	require.Never(t, func() bool { return j.has("stop a") }, 50*time.Millisecond, 5*time.Millisecond)

	close(failAt)
	err := r.result(t)
	require.ErrorIs(t, err, boom)
	assert.EqualError(t, err, `component "b" failed: boom`)
	events := j.list()
	assert.Equal(t, []string{"stop c", "close c", "close b", "stop a", "close a"}, events[len(events)-5:])
}

func TestLoopBuildFailure(t *testing.T) {
	j := &journal{}
	inf := syncedInformer("node", j)
	bad := fakeEntry("cri", j)
	bad.build = func(context.Context, *env) (*component, error) {
		return nil, errors.New("connecting to the container runtime: no CRI runtime found")
	}
	r := startLoop(t, fakeEntry("node", j, inf), bad, fakeEntry("crr", j))
	err := r.result(t)
	assert.EqualError(t, err, `starting component "cri": connecting to the container runtime: no CRI runtime found`)
	assert.Equal(t, []string{"build node", "close node"}, j.list(), "what was built is closed; nothing started")
	assert.Zero(t, inf.runs.Load())
}

func TestLoopReadinessWhileBuilding(t *testing.T) {
	j := &journal{}
	connected := make(chan struct{})
	cri := fakeEntry("cri", j)
	cri.starting = "not connected to a container runtime yet"
	cri.build = func(ctx context.Context, _ *env) (*component, error) {
		select {
		case <-connected:
			return &component{check: healthz.NewCheck("cri", func(*http.Request) error { return nil })}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r := startLoop(t, cri, fakeEntry("crr", j))
	assert.EqualError(t, r.check("cri"), "not connected to a container runtime yet")
	assert.EqualError(t, r.check("crr"), "not started yet")

	// Cancelled while a component is being built: a clean stop.
	require.NoError(t, r.stop(t))
	assert.Empty(t, j.list())
}

func TestLoopChecksPassTheComponentsCheckAndDetail(t *testing.T) {
	j := &journal{}
	inf := &fakeInformer{name: "node", j: j}
	var fail atomic.Bool
	fail.Store(true)
	e := fakeEntry("node", j, inf)
	e.build = func(context.Context, *env) (*component, error) {
		return &component{informers: []informer{{name: "node", syncer: inf}}, check: detailedCheck{&fail}}, nil
	}
	r := startLoop(t, e)
	require.Eventually(t, func() bool {
		return r.check("node") != nil && r.check("node").Error() == "informers have not synced: node"
	},
		10*time.Second, time.Millisecond)
	inf.synced.Store(true)
	require.Eventually(t, func() bool {
		err := r.check("node")
		return err != nil && err.Error() == `node "node-a" does not exist`
	}, 10*time.Second, time.Millisecond, "the component's own check once its informers have synced")
	fail.Store(false)
	assert.NoError(t, r.check("node"))
	assert.Equal(t, "detail", r.l.readyz()[0].(healthz.Detailer).Detail())
}

type detailedCheck struct{ fail *atomic.Bool }

func (detailedCheck) Name() string { return "node" }
func (c detailedCheck) Check(*http.Request) error {
	if c.fail.Load() {
		return errors.New(`node "node-a" does not exist`)
	}
	return nil
}
func (detailedCheck) Detail() string { return "detail" }

func TestLoopLeavesOutEntriesThatAreOff(t *testing.T) {
	j := &journal{}
	off := fakeEntry("imagepull", j)
	off.on = func(*env) bool { return false }
	quiet := fakeEntry("heartbeat", j)
	quiet.readyz = false
	r := startLoop(t, fakeEntry("cri", j), off, quiet)
	waitJournal(t, j, "run cri", "run heartbeat")
	var names []string
	for _, c := range r.l.readyz() {
		names = append(names, c.Name())
	}
	assert.Equal(t, []string{"cri"}, names)
	require.NoError(t, r.stop(t))
	assert.False(t, j.has("build imagepull"))
}
