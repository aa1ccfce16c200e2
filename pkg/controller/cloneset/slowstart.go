package cloneset

import (
	"errors"
	"sync"
)

// slowStart calls fn for items 0..n-1 in batches of 1, 2, 4, … run concurrently, stopping after
// the first batch with a failure: when creations fail (quota, an admission webhook refusing the
// template) only a few calls are made before giving up, and when they succeed the batches soon
// run wide. It returns how many calls succeeded and the failures of the last batch.
func slowStart(n int, fn func(i int) error) (int, error) {
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
