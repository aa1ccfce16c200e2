package durations

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
