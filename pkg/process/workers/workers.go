// Package workers is the sync loop every kruise controller shares: keys from a typed,
// rate-limited workqueue go to a sync function, which may ask to see its key again later;
// failures and conflicts are retried with the queue's backoff.
package workers

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// SyncFunc handles one key. It returns when to look at the key again (zero: only on the next
// event) or an error to retry it with backoff.
type SyncFunc func(ctx context.Context, key string) (time.Duration, error)

// Loop pairs a queue with the function that handles its keys.
type Loop struct {
	Queue workqueue.TypedRateLimitingInterface[string]
	Sync  SyncFunc
	// KeyName is the log key under which a queue key is logged, e.g. "crr" or "pod".
	KeyName string
}

// Run runs n workers until ctx ends, then shuts the queue down and waits for them to finish
// their current key.
func (l Loop) Run(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for l.ProcessNext(ctx) {
				}
			}, time.Second)
		})
	}
	<-ctx.Done()
	l.Queue.ShutDown()
	wg.Wait()
}

// ProcessNext handles one key from the queue; it returns false once the queue is shut down.
func (l Loop) ProcessNext(ctx context.Context) bool {
	key, quit := l.Queue.Get()
	if quit {
		return false
	}
	defer l.Queue.Done(key)

	after, err := l.Sync(ctx, key)
	switch {
	case apierrors.IsConflict(err):
		// The object changed since the cache showed it: read again and decide again.
		klog.FromContext(ctx).V(2).Info("Object changed while we acted on it; requeueing", l.KeyName, key, "err", err)
		l.Queue.AddRateLimited(key)
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Sync failed; requeueing", l.KeyName, key)
		l.Queue.AddRateLimited(key)
	default:
		l.Queue.Forget(key)
		if after > 0 {
			l.Queue.AddAfter(key, after)
		}
	}
	return true
}

// NewQueue returns the typed, rate-limited queue of keys every kruise controller uses: the
// default controller backoff, named for metrics, timed by clk.
func NewQueue(name string, clk clock.WithTicker) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk},
	)
}
