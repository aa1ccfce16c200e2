package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/utils/clock"
)

// Every wait of the e2e tests and benchmarks goes through poll: WaitFor and Poll wait for a
// condition, Consistently checks that one keeps holding. A condition returns whether it holds,
// what it observed (phases, counts, IDs: what a reader of the failure needs) and an error.
//
//   - An error that says the read itself failed for a passing reason (the API server or the
//     daemon restarting or overloaded, a request cut short, see Retry and transient) is noted
//     and polled past: on a loaded machine one slow request must not end a wait.
//   - Any other error ends the wait at once and fails it: the condition found something that
//     can never become right.
//   - On timeout the failure names the last observation a successful check made, when it was
//     made and the observations before it, not the error of the final poll.
//
// A check is given the caller's context, never one that ends with the wait's own deadline, so
// the last check before the deadline is not cut short (each is bounded by checkTimeout).

const (
	// pollInterval spaces the checks of WaitFor and Consistently.
	pollInterval = 250 * time.Millisecond
	// checkTimeout bounds one check.
	checkTimeout = 30 * time.Second
	// keepObservations is how many of the last distinct observations a failure lists.
	keepObservations = 6
)

// waitClock times the waits; unit tests replace it.
var waitClock clock.WithTicker = clock.RealClock{}

// Cond is one check of a condition: whether it holds, what was observed, and an error.
type Cond func(ctx context.Context) (ok bool, observed string, err error)

// retryable marks an error the condition expects to pass (see Retry).
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// Retry marks err as a failed read that may succeed on a later check (the component being read
// is restarting, say): the wait notes it and goes on polling. Errors of overloaded or
// unreachable API servers are recognised without it.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return retryable{err: err}
}

// transient reports whether err says only that this read failed, not that the condition can
// never hold.
func transient(err error) bool {
	var r retryable
	switch {
	case errors.As(err, &r):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// A request cut short by checkTimeout or the client's rate limiter; the caller's
		// context ending is handled by poll itself.
		return true
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		utilnet.IsHTTP2ConnectionLost(err), utilnet.IsTimeout(err):
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// observation is what one successful check saw, and when.
type observation struct {
	at   time.Duration // when the check began, since the wait began
	what string
}

// pollResult is how a poll ended.
type pollResult struct {
	// matched: the poll ended on a check whose outcome was the one it looked for.
	matched bool
	elapsed time.Duration
	checks  int
	// seen are the last distinct observations of successful checks, oldest first.
	seen []observation
	// failedReads counts the checks that failed transiently; lastReadErr is the latest.
	failedReads int
	lastReadErr error
	// err is the error that ended the poll early (a condition's, or the caller's context's).
	err error
}

func (r *pollResult) observe(at time.Duration, what string) {
	if n := len(r.seen); n > 0 && r.seen[n-1].what == what {
		return
	}
	r.seen = append(r.seen, observation{at: at, what: what})
	if len(r.seen) > keepObservations {
		r.seen = r.seen[1:]
	}
}

// last is the last observation of a successful check, or "".
func (r *pollResult) last() string {
	if len(r.seen) == 0 {
		return ""
	}
	return r.seen[len(r.seen)-1].what
}

// describe says what the poll saw: its last observation, those before it and any failed reads.
func (r *pollResult) describe() string {
	var b strings.Builder
	if len(r.seen) == 0 {
		fmt.Fprintf(&b, "no check succeeded in %d attempts over %s", r.checks, r.elapsed.Round(time.Millisecond))
	} else {
		l := r.seen[len(r.seen)-1]
		fmt.Fprintf(&b, "last observed (from %s into the wait, %d checks in %s): %s", l.at.Round(time.Millisecond), r.checks,
			r.elapsed.Round(time.Millisecond), orNothing(l.what))
		if len(r.seen) > 1 {
			var prev []string
			for _, o := range r.seen[:len(r.seen)-1] {
				prev = append(prev, fmt.Sprintf("[%s] %s", o.at.Round(time.Millisecond), orNothing(o.what)))
			}
			fmt.Fprintf(&b, "; before that: %s", strings.Join(prev, " -> "))
		}
	}
	if r.failedReads > 0 {
		fmt.Fprintf(&b, "; %d checks could not read (last: %v)", r.failedReads, r.lastReadErr)
	}
	return b.String()
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing reported)"
	}
	return s
}

// poll checks cond every interval. It ends when cond holds (want true) or does not (want false),
// when cond returns an error that is not transient, when ctx ends, or at the first check that
// begins after timeout has passed.
func poll(ctx context.Context, interval, timeout time.Duration, want bool, cond Cond) *pollResult {
	start := waitClock.Now()
	r := &pollResult{}
	tick := waitClock.NewTicker(interval)
	defer tick.Stop()
	for {
		at := waitClock.Since(start)
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		ok, observed, err := cond(cctx)
		cancel()
		r.checks++
		r.elapsed = waitClock.Since(start)
		switch {
		case err != nil && ctx.Err() != nil:
			r.err = fmt.Errorf("the test's context ended: %w", context.Cause(ctx))
			return r
		case err != nil && transient(err):
			r.failedReads++
			r.lastReadErr = err
		case err != nil:
			r.err = err
			if observed != "" {
				r.observe(at, observed)
			}
			return r
		default:
			r.observe(at, observed)
			if ok == want {
				r.matched = true
				return r
			}
		}
		if r.elapsed >= timeout {
			return r
		}
		select {
		case <-ctx.Done():
			r.err = fmt.Errorf("the test's context ended: %w", context.Cause(ctx))
			return r
		case <-tick.C():
		}
	}
}

// WaitFor checks cond every 250 ms until it holds and fails the test if it does not within
// timeout, or if cond returns an error that is not a passing read failure. The failure names
// desc, what the last successful check observed and the observations before it.
func WaitFor(ctx context.Context, t testing.TB, timeout time.Duration, desc string, cond Cond) {
	t.Helper()
	r := poll(ctx, pollInterval, timeout, true, cond)
	switch {
	case r.matched:
	case r.err != nil:
		t.Fatalf("waiting for %s: %v (%s)", desc, r.err, r.describe())
	default:
		t.Fatalf("waiting for %s: not within %s; %s", desc, timeout, r.describe())
	}
}

// Poll is WaitFor without failing the test, and at a gentler pace (every 500 ms: a test may run
// dozens of these side by side on one client): it returns the last observation of a successful
// check and, when cond did not hold within timeout, an error saying what was seen.
func Poll(ctx context.Context, timeout time.Duration, cond Cond) (string, error) {
	r := poll(ctx, 500*time.Millisecond, timeout, true, cond)
	switch {
	case r.matched:
		return r.last(), nil
	case r.err != nil:
		return r.last(), fmt.Errorf("%w (%s)", r.err, r.describe())
	default:
		return r.last(), fmt.Errorf("not within %s; %s", timeout, r.describe())
	}
}

// Consistently checks cond every 250 ms for the whole of d and fails the test the first time it
// does not hold, or if no check could read anything in the window. It asserts that something
// does not happen within a window.
func Consistently(ctx context.Context, t testing.TB, d time.Duration, desc string, cond Cond) {
	t.Helper()
	r := poll(ctx, pollInterval, d, false, cond)
	switch {
	case r.matched:
		t.Fatalf("expected %s, but observed: %s (%s)", desc, r.last(), r.describe())
	case r.err != nil:
		t.Fatalf("checking that %s: %v (%s)", desc, r.err, r.describe())
	case len(r.seen) == 0:
		t.Fatalf("checking that %s: %s", desc, r.describe())
	}
}
