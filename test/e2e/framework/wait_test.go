package framework

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeTB records the failure of a wait instead of failing this test.
type fakeTB struct {
	testing.TB
	failure string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failureOf runs wait with a fakeTB and returns how it failed ("" if it did not).
func failureOf(wait func(testing.TB)) string {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(tb)
	}()
	<-done
	return tb.failure
}

// fakeWaitClock makes the waits run on a fake clock for the test; steppingCond advances it by
// the poll interval after each check, so the next tick is due.
func fakeWaitClock(t *testing.T) *clocktesting.FakeClock {
	clk := clocktesting.NewFakeClock(time.Now())
	old := waitClock
	waitClock = clk
	t.Cleanup(func() { waitClock = old })
	return clk
}

func steppingCond(clk *clocktesting.FakeClock, check func(n int, elapsed time.Duration) (bool, string, error)) Cond {
	return steppingCondEvery(clk, pollInterval, check)
}

func steppingCondEvery(clk *clocktesting.FakeClock, interval time.Duration, check func(n int, elapsed time.Duration) (bool, string, error)) Cond {
	start := clk.Now()
	n := 0
	return func(ctx context.Context) (bool, string, error) {
		n++
		ok, obs, err := check(n, clk.Since(start))
		clk.Step(interval)
		return ok, obs, err
	}
}

var rateLimited = fmt.Errorf("client rate limiter Wait returned an error: %w", context.DeadlineExceeded)

// The failure of TestCRRDaemonKilledMidRecreate that said nothing: the last check's read was cut
// short, and the wait reported that instead of what the checks before it had seen.
func TestWaitForReportsTheLastObservationNotTheFinalReadError(t *testing.T) {
	clk := fakeWaitClock(t)
	cond := steppingCond(clk, func(n int, elapsed time.Duration) (bool, string, error) {
		if elapsed >= 1750*time.Millisecond {
			return false, "", rateLimited
		}
		return false, fmt.Sprintf("container first restartCount 2, want 1 (check %d)", n), nil
	})
	failure := failureOf(func(tb testing.TB) { WaitFor(context.Background(), tb, 2*time.Second, "first stopped once", cond) })
	require.NotEmpty(t, failure, "the condition never held")
	assert.Contains(t, failure, "waiting for first stopped once: not within 2s")
	assert.Contains(t, failure, "container first restartCount 2, want 1 (check 7)", "the last successful check's observation")
	assert.Contains(t, failure, "checks could not read (last: client rate limiter Wait returned an error: context deadline exceeded)")
}

func TestWaitForListsTheObservationsBeforeTheLast(t *testing.T) {
	clk := fakeWaitClock(t)
	cond := steppingCond(clk, func(n int, _ time.Duration) (bool, string, error) {
		phases := []string{"Pending", "Pending", "Recreating", "Recreating"}
		if n <= len(phases) {
			return false, "phase " + phases[n-1], nil
		}
		return false, "phase Completed, container second restartCount 0", nil
	})
	failure := failureOf(func(tb testing.TB) { WaitFor(context.Background(), tb, 3*time.Second, "x", cond) })
	assert.Contains(t, failure, "last observed (from 1s into the wait, 12 checks in 3s): phase Completed, container second restartCount 0")
	assert.Contains(t, failure, "before that: [0s] phase Pending -> [500ms] phase Recreating")
}

func TestWaitForPollsPastFailedReads(t *testing.T) {
	for _, err := range []error{
		rateLimited,
		Retry(errors.New("the daemon is restarting")),
		apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "get", 1),
		apierrors.NewTooManyRequests("slow down", 1),
		fmt.Errorf("dial: %w", syscall.ECONNREFUSED),
	} {
		t.Run(err.Error(), func(t *testing.T) {
			clk := fakeWaitClock(t)
			cond := steppingCond(clk, func(n int, _ time.Duration) (bool, string, error) {
				if n < 3 {
					return false, "", err
				}
				return true, "done", nil
			})
			assert.Empty(t, failureOf(func(tb testing.TB) { WaitFor(context.Background(), tb, time.Minute, "x", cond) }))
		})
	}
}

func TestWaitForEndsAtOnceOnAConditionError(t *testing.T) {
	clk := fakeWaitClock(t)
	cond := steppingCond(clk, func(n int, _ time.Duration) (bool, string, error) {
		if n == 2 {
			return false, "", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")
		}
		return false, "pod web Running", nil
	})
	failure := failureOf(func(tb testing.TB) { WaitFor(context.Background(), tb, time.Hour, "x", cond) })
	assert.Contains(t, failure, `waiting for x: pods "web" not found`)
	assert.Contains(t, failure, "pod web Running", "with what was seen before")
	assert.Contains(t, failure, "2 checks in 500ms")
}

// A check gets the caller's context, not one that ends with the wait: the last check before the
// deadline is not cut short by it.
func TestWaitForChecksAreNotBoundByTheWaitsDeadline(t *testing.T) {
	var deadlines []time.Duration
	failure := failureOf(func(tb testing.TB) {
		WaitFor(context.Background(), tb, 10*time.Millisecond, "x", func(ctx context.Context) (bool, string, error) {
			d, ok := ctx.Deadline()
			require.True(t, ok, "each check is bounded")
			deadlines = append(deadlines, time.Until(d))
			return false, "not yet", nil
		})
	})
	assert.Contains(t, failure, "not within 10ms")
	require.NotEmpty(t, deadlines)
	for _, d := range deadlines {
		assert.Greater(t, d, 20*time.Second, "a check may take up to checkTimeout")
	}
}

func TestPollReturnsTheLastObservation(t *testing.T) {
	clk := fakeWaitClock(t)
	cond := steppingCondEvery(clk, 500*time.Millisecond, func(n int, elapsed time.Duration) (bool, string, error) {
		if elapsed >= 2*time.Second {
			return false, "", rateLimited
		}
		return false, fmt.Sprintf("event count %d", n), nil
	})
	last, err := Poll(context.Background(), 3*time.Second, cond)
	require.Error(t, err)
	assert.Equal(t, "event count 4", last)
	assert.ErrorContains(t, err, "not within 3s; last observed")
}

func TestConsistently(t *testing.T) {
	t.Run("holds", func(t *testing.T) {
		clk := fakeWaitClock(t)
		cond := steppingCond(clk, func(n int, _ time.Duration) (bool, string, error) {
			if n == 2 {
				return false, "", rateLimited // a failed read is no violation
			}
			return true, "restartCount 1", nil
		})
		assert.Empty(t, failureOf(func(tb testing.TB) { Consistently(context.Background(), tb, 2*time.Second, "x", cond) }))
	})
	t.Run("stops holding", func(t *testing.T) {
		clk := fakeWaitClock(t)
		cond := steppingCond(clk, func(n int, _ time.Duration) (bool, string, error) {
			if n == 4 {
				return false, "restartCount 2", nil
			}
			return true, "restartCount 1", nil
		})
		failure := failureOf(func(tb testing.TB) { Consistently(context.Background(), tb, time.Minute, "one restart", cond) })
		assert.Contains(t, failure, "expected one restart, but observed: restartCount 2")
		assert.Contains(t, failure, "before that: [0s] restartCount 1")
	})
	t.Run("nothing could be read", func(t *testing.T) {
		clk := fakeWaitClock(t)
		cond := steppingCond(clk, func(int, time.Duration) (bool, string, error) { return false, "", rateLimited })
		failure := failureOf(func(tb testing.TB) { Consistently(context.Background(), tb, time.Second, "x", cond) })
		assert.Contains(t, failure, "checking that x: no check succeeded in 4 attempts over 1s; 4 checks could not read")
	})
}

func TestTheTestsContextEndingIsReported(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	failure := failureOf(func(tb testing.TB) {
		WaitFor(ctx, tb, time.Minute, "x", func(ctx context.Context) (bool, string, error) { return false, "", ctx.Err() })
	})
	assert.Contains(t, failure, "waiting for x: the test's context ended: context canceled")
}
