package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
)

// fakeController runs until ctx is done, or fails / returns early on demand.
type fakeController struct {
	name    string
	started atomic.Int32
	workers atomic.Int32
	stopped atomic.Int32
	fail    chan error
	// stuck, when set, makes Run ignore ctx until it is closed.
	stuck chan struct{}
	// draining, when set, is closed once Run has seen ctx end; Run then returns only once
	// drain is closed, like a worker finishing the key it holds.
	draining, drain chan struct{}
	// returned, when set, is called as Run returns.
	returned func()
}

func newFake(name string) *fakeController {
	return &fakeController{name: name, fail: make(chan error, 1)}
}

func (f *fakeController) Name() string { return f.name }

func (f *fakeController) Run(ctx context.Context, workers int) error {
	f.started.Add(1)
	defer f.stopped.Add(1)
	if f.returned != nil {
		defer f.returned()
	}
	f.workers.Store(int32(workers))
	if f.stuck != nil {
		<-f.stuck
		return nil
	}
	select {
	case <-ctx.Done():
		if f.draining != nil {
			close(f.draining)
			<-f.drain
		}
		return nil
	case err := <-f.fail:
		return err
	}
}

func TestRegistryRejectsDuplicatesAndEmptyNames(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.Register(newFake("a")))
	require.NoError(t, r.Register(newFake("b")))
	assert.ErrorContains(t, r.Register(newFake("a")), `"a" registered twice`)
	assert.ErrorContains(t, r.Register(newFake("")), "empty name")
	assert.Equal(t, []string{"a", "b"}, r.Names())
}

func TestRegistryRunsAllUntilCancelled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	a, b := newFake("a"), newFake("b")
	r := NewRegistry()
	require.NoError(t, r.Register(a))
	require.NoError(t, r.Register(b))

	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, 3) }()
	require.Eventually(t, func() bool { return a.started.Load() == 1 && b.started.Load() == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.EqualValues(t, 3, a.workers.Load())
	cancel()
	require.NoError(t, <-done)
}

func TestRegistryStopsAllOnFailure(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	a, b := newFake("a"), newFake("b")
	r := NewRegistry()
	require.NoError(t, r.Register(a))
	require.NoError(t, r.Register(b))
	boom := errors.New("boom")
	a.fail <- boom
	err := r.Run(ctx, 1)
	require.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, `controller "a" failed`)

	c := newFake("c")
	c.fail <- nil // returns early without error
	r = NewRegistry()
	require.NoError(t, r.Register(c))
	assert.ErrorContains(t, r.Run(ctx, 1), `controller "c" stopped before shutdown`)
}

func TestEmptyRegistryIdles(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.NoError(t, NewRegistry().Run(ctx, 1))
}
