// Package durations turns the integer seconds of API fields (activeDeadlineSeconds, grace
// periods, hook sleeps) into time.Duration without overflow: a count of seconds larger than a
// Duration holds would otherwise wrap round to a short or negative period.
package durations

import (
	"context"
	"math"
	"time"

	"k8s.io/utils/clock"
)

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// Seconds is n seconds, clamped to what a time.Duration holds.
func Seconds(n int64) time.Duration {
	return time.Duration(max(min(n, maxSeconds), -maxSeconds)) * time.Second
}

// Sleep waits d on clk (a fake one in tests) and reports true, or returns
// false as soon as ctx ends. A d of zero or less does not wait.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// Shortest is the smallest positive duration of ds; 0 when none is. A controller gathers the
// requeue delays of one pass with it, a 0 among them meaning "no requeue wanted".
func Shortest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}
