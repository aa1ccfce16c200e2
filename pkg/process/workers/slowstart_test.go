package workers

import (
	"errors"
	"sync"
	"testing"
)

func TestSlowStart(t *testing.T) {
	var mu sync.Mutex
	var calls []int
	record := func(fail map[int]bool) func(int) error {
		calls = nil
		return func(i int) error {
			mu.Lock()
			calls = append(calls, i)
			mu.Unlock()
			if fail[i] {
				return errors.New("refused")
			}
			return nil
		}
	}

	if ok, err := SlowStart(10, record(nil)); ok != 10 || err != nil || len(calls) != 10 {
		t.Errorf("all succeed: %d ok, %v, %d calls; want 10, nil, 10", ok, err, len(calls))
	}
	// Batches 1, 2, 4: a failure in the third batch (items 3..6) stops before items 7..9.
	ok, err := SlowStart(10, record(map[int]bool{4: true}))
	if ok != 6 || err == nil || len(calls) != 7 {
		t.Errorf("failure in batch 3: %d ok, %v, %d calls; want 6, an error, 7", ok, err, len(calls))
	}
	if ok, err := SlowStart(5, record(map[int]bool{0: true})); ok != 0 || err == nil || len(calls) != 1 {
		t.Errorf("first call fails: %d ok, %v, %d calls; want 0, an error, 1", ok, err, len(calls))
	}
	if ok, err := SlowStart(0, record(nil)); ok != 0 || err != nil || len(calls) != 0 {
		t.Errorf("nothing to do: %d ok, %v, %d calls", ok, err, len(calls))
	}
}
