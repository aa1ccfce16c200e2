// Package durations turns the integer seconds of API fields (activeDeadlineSeconds, grace
// periods, hook sleeps) into time.Duration without overflow: a count of seconds larger than a
// Duration holds would otherwise wrap round to a short or negative period.
package durations

import (
	"math"
	"time"
)

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// Seconds is n seconds, clamped to what a time.Duration holds.
func Seconds(n int64) time.Duration {
	return time.Duration(max(min(n, maxSeconds), -maxSeconds)) * time.Second
}
