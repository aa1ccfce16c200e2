package workers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

func newQueue(clk *clocktesting.FakeClock) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "test", Clock: clk})
}

func TestProcessNext(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "a", errors.New("changed"))
	for _, tc := range []struct {
		name        string
		after       time.Duration
		err         error
		wantRetries int
		wantLater   bool
	}{
		{name: "done: forgotten", wantRetries: 0},
		{name: "look again later", after: time.Minute, wantLater: true},
		{name: "error: retried with backoff", err: errors.New("boom"), wantRetries: 1},
		{name: "conflict: retried with backoff", err: conflict, wantRetries: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			q := newQueue(clk)
			defer q.ShutDown()
			var got []string
			l := Loop{Queue: q, KeyName: "thing", Sync: func(_ context.Context, key string) (time.Duration, error) {
				got = append(got, key)
				return tc.after, tc.err
			}}
			q.Add("a")
			require.True(t, l.ProcessNext(context.Background()))
			assert.Equal(t, []string{"a"}, got)
			assert.Equal(t, tc.wantRetries, q.NumRequeues("a"))
			assert.Equal(t, 0, q.Len(), "nothing is queued at once")
			if tc.wantLater {
				clk.Step(time.Minute)
				require.Eventually(t, func() bool { return q.Len() == 1 }, 5*time.Second, 5*time.Millisecond,
					"the key comes back after the delay sync asked for")
			}
		})
	}
}

func TestRunStopsWithContext(t *testing.T) {
	q := newQueue(clocktesting.NewFakeClock(time.Now()))
	handled := make(chan string, 1)
	l := Loop{Queue: q, KeyName: "thing", Sync: func(_ context.Context, key string) (time.Duration, error) {
		handled <- key
		return 0, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx, 2); close(done) }()
	q.Add("a")
	assert.Equal(t, "a", <-handled)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	assert.True(t, q.ShuttingDown())
}
