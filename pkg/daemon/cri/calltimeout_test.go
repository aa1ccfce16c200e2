package cri

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCallTimeoutSaturates(t *testing.T) {
	assert.Equal(t, 10*time.Second+CallMargin, callTimeout(10))
	assert.Equal(t, CallMargin, callTimeout(0))
	for _, secs := range []int64{math.MaxInt64 / int64(time.Second), math.MaxInt64} {
		assert.Equal(t, time.Duration(math.MaxInt64), callTimeout(secs), "secs %d", secs)
	}
	assert.Positive(t, callTimeout(int64((math.MaxInt64-CallMargin)/time.Second)))
}
