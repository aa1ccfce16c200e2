package ordinals

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveWanted lists the wanted ordinals one by one: the reference Wanted must agree with.
func naiveWanted(start, replicas int, reserved Reserved) []int {
	out := []int{}
	for o := max(start, 0); len(out) < replicas; o++ {
		if !reserved.Contains(o) {
			out = append(out, o)
		}
	}
	return out
}

func collect(w Wanted) []int {
	out := []int{}
	for _, o := range w.All() {
		out = append(out, o)
	}
	return out
}

// Every method of Wanted agrees with the list written out, on random small sets whose reserved
// ranges overlap, touch, repeat and straddle the start.
func TestWantedMatchesTheListWrittenOut(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 2000; round++ {
		start, replicas := rng.Intn(6), rng.Intn(12)
		var reserved Reserved
		for i := rng.Intn(5); i > 0; i-- {
			from := rng.Intn(20)
			reserved = append(reserved, Range{From: from, To: from + rng.Intn(4)})
		}
		want := naiveWanted(start, replicas, reserved)
		w := NewWanted(start, replicas, reserved)
		require.Equal(t, want, collect(w), "start %d replicas %d reserved %v", start, replicas, reserved)
		require.Equal(t, len(want), w.Len())
		position := map[int]int{}
		for i, o := range want {
			require.Equal(t, o, w.At(i), "At(%d) of %v", i, want)
			position[o] = i
		}
		for o := 0; o < 40; o++ {
			pos, ok := w.Position(o)
			wantPos, wantOK := position[o]
			require.Equal(t, wantOK, ok, "Position(%d) of %v", o, want)
			require.Equal(t, wantPos, pos, "Position(%d) of %v", o, want)
			require.Equal(t, wantOK, w.Contains(o))
		}
		// Missing: the first k wanted ordinals without a pod, pods at random ordinals.
		pods := map[int]bool{}
		for i := rng.Intn(10); i > 0; i-- {
			pods[rng.Intn(30)] = true
		}
		k := rng.Intn(6)
		var wantMissing []int
		for _, o := range want {
			if !pods[o] && len(wantMissing) < k {
				wantMissing = append(wantMissing, o)
			}
		}
		looked := 0
		got := w.Missing(func(o int) bool { looked++; return pods[o] }, k)
		require.Equal(t, len(wantMissing), len(got), "Missing(%d) of %v with pods %v", k, want, pods)
		if len(got) > 0 {
			require.Equal(t, wantMissing, got)
		}
		require.LessOrEqual(t, looked, len(pods)+k, "Missing looks at no more than the pods and k")
	}
}

// The largest set the API admits, with reserved ranges and a start: nothing is listed out, and
// ordinals beyond int32 are computed without overflow.
func TestWantedHuge(t *testing.T) {
	const maxInt32 = math.MaxInt32
	w := NewWanted(maxInt32, maxInt32, Reserved{{From: maxInt32, To: maxInt32}, {From: 0, To: maxInt32 - 1}})
	assert.Equal(t, maxInt32, w.Len())
	assert.Equal(t, maxInt32+1, w.At(0), "the start is reserved")
	assert.Equal(t, 2*maxInt32, w.At(maxInt32-1))
	pos, ok := w.Position(2 * maxInt32)
	assert.True(t, ok)
	assert.Equal(t, maxInt32-1, pos)
	assert.False(t, w.Contains(2*maxInt32+1), "beyond the replicas")
	assert.False(t, w.Contains(maxInt32), "reserved")

	w = NewWanted(0, maxInt32, Reserved{{From: 1, To: 2000000000}, {From: 2000000000, To: 2000000001}})
	assert.Equal(t, []int{0, 2000000002, 2000000003}, w.Missing(func(int) bool { return false }, 3))
	assert.Equal(t, []int{2000000003}, w.Missing(func(o int) bool { return o <= 2000000002 }, 1))
	pos, ok = w.Position(2000000002)
	assert.True(t, ok)
	assert.Equal(t, 1, pos)
	last := w.At(maxInt32 - 1)
	assert.Equal(t, maxInt32-1+2000000001, last)
	assert.True(t, w.Contains(last))
	assert.False(t, w.Contains(last+1))
}
