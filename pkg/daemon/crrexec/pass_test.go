package crrexec

import (
	"testing"
	"time"
)

// A waiting container's look-again delay must not push back another's, and
// zero (only the next event) gives way to any real delay.
func TestSooner(t *testing.T) {
	for _, c := range []struct{ a, b, want time.Duration }{
		{0, 0, 0},
		{0, 5 * time.Second, 5 * time.Second},
		{5 * time.Second, 0, 5 * time.Second},
		{3 * time.Second, 5 * time.Second, 3 * time.Second},
		{5 * time.Second, 3 * time.Second, 3 * time.Second},
	} {
		if got := sooner(c.a, c.b); got != c.want {
			t.Errorf("sooner(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
