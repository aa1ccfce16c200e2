package workers

import (
	"errors"
	"sync"
)

// Burst is the most pods one pass of a workload controller creates, or deletes: the built-in
// ReplicaSet controller's burstReplicas. Whatever a user writes in replicas, a pass plans, holds
// in memory and sends this many at most; the next pass comes once the cache shows them (the
// expectations) and goes on from there. 500 creations take a few seconds against a healthy API
// server, so a large scale-out is not slowed by it in any way one would notice.
const Burst = 500

// SlowStart calls fn for items 0..n-1 in batches of 1, 2, 4, … run concurrently, stopping after
// the first batch with a failure: when creations fail (quota, an admission webhook refusing the
// template) only a few calls are made before giving up, and when they succeed the batches soon
// run wide. It returns how many calls succeeded and the failures of the last batch.
func SlowStart(n int, fn func(i int) error) (int, error) {
	done := 0
	for batch := 1; done < n; batch *= 2 {
		size := min(batch, n-done)
		errs := make([]error, size)
		var wg sync.WaitGroup
		for k := 0; k < size; k++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				errs[k] = fn(done + k)
			}(k)
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			}
		}
		if err := errors.Join(errs...); err != nil {
			return done + ok, err
		}
		done += size
	}
	return done, nil
}
