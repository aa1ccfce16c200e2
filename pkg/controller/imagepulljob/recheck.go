package imagepulljob

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// rechecks hold the timed looks at jobs: the active deadline, a Never job's
// next renewal, the ttl after completion. A job's latest sync decides its
// one pending look, replacing any earlier one; a sync that asks for none
// cancels it. The queue's AddAfter cannot be taken back, so a job that
// completed before its deadline was synced again when the deadline passed,
// on an idle cluster, for nothing: one reconcile per such job.
type rechecks struct {
	clock clock.WithTicker
	add   func(key string)

	mu     sync.Mutex
	timers map[string]*recheck
}

// recheck is one pending look; stop ends its goroutine without adding.
type recheck struct {
	timer clock.Timer
	stop  chan struct{}
}

func newRechecks(clk clock.WithTicker, add func(string)) *rechecks {
	return &rechecks{clock: clk, add: add, timers: map[string]*recheck{}}
}

// set makes after (zero: none) the only pending look at key.
func (r *rechecks) set(key string, after time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.timers[key]; old != nil {
		old.timer.Stop()
		close(old.stop)
		delete(r.timers, key)
	}
	if after <= 0 {
		return
	}
	rc := &recheck{timer: r.clock.NewTimer(after), stop: make(chan struct{})}
	r.timers[key] = rc
	go func() {
		select {
		case <-rc.timer.C():
		case <-rc.stop:
			return
		}
		r.mu.Lock()
		if r.timers[key] == rc {
			delete(r.timers, key)
		}
		r.mu.Unlock()
		r.add(key)
	}()
}

// pending is the number of looks not yet due.
func (r *rechecks) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.timers)
}

// stopAll cancels every pending look (the controller stops).
func (r *rechecks) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, rc := range r.timers {
		rc.timer.Stop()
		close(rc.stop)
		delete(r.timers, key)
	}
}

// syncJobTimed is the job queue's sync: syncJob, whose answer of when to
// look again becomes the job's only pending recheck. A failed sync leaves
// the pending one alone (the queue retries it with backoff).
func (c *Controller) syncJobTimed(ctx context.Context, key string) (time.Duration, error) {
	after, err := c.syncJob(ctx, key)
	if err != nil {
		return 0, err
	}
	c.rechecks.set(key, after)
	return 0, nil
}
