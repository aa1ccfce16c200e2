package durations

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want time.Duration
	}{
		{0, 0},
		{30, 30 * time.Second},
		{-5, -5 * time.Second},
		// 18446744074 s wraps round to about 290 ms without the clamp.
		{18446744074, time.Duration(maxSeconds) * time.Second},
		{math.MaxInt64, time.Duration(maxSeconds) * time.Second},
		{math.MinInt64, -time.Duration(maxSeconds) * time.Second},
	} {
		got := Seconds(tc.in)
		assert.Equal(t, tc.want, got, "Seconds(%d)", tc.in)
		if tc.in > 0 {
			assert.Positive(t, got, "a positive count never becomes negative or zero")
		}
	}
}

func TestSleep(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	done := make(chan bool)
	go func() { done <- Sleep(context.Background(), clk, time.Minute) }()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "Sleep waits on the clock")
	clk.Step(time.Minute)
	assert.True(t, <-done, "the full wait passed")

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(ctx, clk, time.Hour) }()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	cancel()
	assert.False(t, <-done, "cancelled before the hour passed")

	assert.True(t, Sleep(context.Background(), clk, 0), "no wait")
	assert.False(t, Sleep(ctx, clk, -time.Second), "no wait, but ctx has ended")
}

func TestShortest(t *testing.T) {
	assert.Equal(t, time.Duration(0), Shortest())
	assert.Equal(t, time.Duration(0), Shortest(0, -time.Second))
	assert.Equal(t, 2*time.Second, Shortest(0, 3*time.Second, -time.Second, 2*time.Second))
	assert.Equal(t, time.Second, Shortest(time.Second, 0))
}
