package expectations

import (
	"context"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ResourceVersions holds back work on an object until the cache shows it
// at least at the resourceVersion of the controller's last write to it (a
// workload's status or revision, a pod it updated). Objects are keyed by
// UID, so a deleted and re-created object starts afresh.
//
// Resource versions are compared as the numbers etcd makes them. One that
// is not a number cannot be ordered, so it sets no expectation and never
// holds anything back.
type ResourceVersions struct {
	clock   clock.PassiveClock
	timeout time.Duration

	mu       sync.Mutex
	pending  map[types.UID]versionExpectation
	timedOut uint64
}

type versionExpectation struct {
	version uint64
	since   time.Time
	// object names the object in the log line of a timeout.
	object klog.ObjectRef
}

// NewResourceVersions returns a ResourceVersions whose expectations are
// dropped timeout after the write that set them.
func NewResourceVersions(clk clock.PassiveClock, timeout time.Duration) *ResourceVersions {
	return &ResourceVersions{clock: clk, timeout: timeout, pending: map[types.UID]versionExpectation{}}
}

// Expect records obj, as a write returned it: work on it waits until the
// cache shows its resourceVersion or a later one. An older version than
// the one awaited changes nothing.
func (r *ResourceVersions) Expect(obj metav1.Object) {
	version, ok := parseVersion(obj.GetResourceVersion())
	if !ok {
		return
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if current, ok := r.pending[obj.GetUID()]; ok && current.version >= version {
		return
	}
	r.pending[obj.GetUID()] = versionExpectation{version: version, since: now, object: klog.KObj(obj)}
}

// Observe records obj as an informer showed it.
func (r *ResourceVersions) Observe(obj metav1.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observeLocked(obj)
}

// observeLocked drops the expectation of obj if obj meets it.
func (r *ResourceVersions) observeLocked(obj metav1.Object) {
	want, ok := r.pending[obj.GetUID()]
	if !ok {
		return
	}
	if seen, ok := parseVersion(obj.GetResourceVersion()); !ok || seen >= want.version {
		delete(r.pending, obj.GetUID())
	}
}

// Satisfied reports whether obj, as the cache holds it, may be acted on.
// An expectation older than the timeout is dropped, logged and counted
// (TimedOut). When obj must wait, recheck is how long until its
// expectation times out.
func (r *ResourceVersions) Satisfied(ctx context.Context, obj metav1.Object) (ok bool, recheck time.Duration) {
	now := r.clock.Now()
	r.mu.Lock()
	r.observeLocked(obj)
	want, waiting := r.pending[obj.GetUID()]
	expired := waiting && now.Sub(want.since) >= r.timeout
	if expired {
		delete(r.pending, obj.GetUID())
		r.timedOut++
	}
	r.mu.Unlock()

	switch {
	case expired:
		klog.FromContext(ctx).Info("Dropped a resourceVersion expectation the informer did not meet in time",
			"object", want.object, "uid", obj.GetUID(), "expected", want.version,
			"cached", obj.GetResourceVersion(), "timeout", r.timeout)
		return true, 0
	case waiting:
		return false, r.timeout - now.Sub(want.since)
	default:
		return true, 0
	}
}

// Forget drops the expectation of obj: call it when obj is deleted (see
// DeletedObject).
func (r *ResourceVersions) Forget(obj metav1.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, obj.GetUID())
}

// TimedOut returns how many expectations have been dropped on timeout
// since r was made, for a counter metric.
func (r *ResourceVersions) TimedOut() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timedOut
}

func parseVersion(version string) (uint64, bool) {
	n, err := strconv.ParseUint(version, 10, 64)
	return n, err == nil
}
