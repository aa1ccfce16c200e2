package ctrlbase

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/process/workers"
)

func TestClockOrReal(t *testing.T) {
	assert.Equal(t, clock.RealClock{}, Config{}.ClockOrReal())
	fc := clocktesting.NewFakeClock(time.Unix(0, 0))
	assert.Same(t, fc, Config{Clock: fc}.ClockOrReal())
}

func TestHandlers(t *testing.T) {
	var changed, deleted []any
	h := Handlers(func(o any) { changed = append(changed, o) }, func(o any) { deleted = append(deleted, o) })
	h.OnAdd("a", false)
	h.OnUpdate("old", "new")
	h.OnDelete("gone")
	assert.Equal(t, []any{"a", "new"}, changed, "add and the update's new object")
	assert.Equal(t, []any{"gone"}, deleted)
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	queue := workers.NewQueue("test", clock.RealClock{})
	synced := make(chan string, 1)
	loop := workers.Loop{Queue: queue, KeyName: "key", Sync: func(_ context.Context, key string) (time.Duration, error) {
		synced <- key
		return 0, nil
	}}
	var rec record.EventRecorder
	done := make(chan error, 1)
	go func() { done <- Run(ctx, fake.NewClientset(), &rec, loop, 1, "extra", "value") }()
	queue.Add("ns/a")
	assert.Equal(t, "ns/a", <-synced, "the workers run the loop")
	cancel()
	require.NoError(t, <-done)
	assert.NotNil(t, rec, "a recorder was made for the run")
	assert.True(t, queue.ShuttingDown(), "the queue is shut down")
}
