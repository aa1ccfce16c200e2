package spreadinjection

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// writeAttempts bounds the status writes of one admission: each conflict reads the spread again
// live, so a burst of creates settles within a few rounds; beyond, the admission fails and the
// workload controller creates the pod again.
const writeAttempts = 5

// ledger serialises this replica's status writes per WorkloadSpread and remembers the status it
// last wrote until its cache shows it: admissions on one replica then start from the newest
// status (the cache lags its own writes) and conflict only with other replicas'.
type ledger struct {
	spreads Spreads
	mu      sync.Mutex
	locks   map[types.UID]*entryLock
	written map[types.UID]*appsv1alpha1.WorkloadSpread
}

type entryLock struct {
	sync.Mutex
	users int
}

func newLedger(s Spreads) *ledger {
	return &ledger{spreads: s, locks: map[types.UID]*entryLock{}, written: map[types.UID]*appsv1alpha1.WorkloadSpread{}}
}

// start is the copy to work on: cached, or what this replica wrote last when the cache does not
// show it yet (then kept; else forgotten).
func (l *ledger) start(cached *appsv1alpha1.WorkloadSpread) *appsv1alpha1.WorkloadSpread {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.written[cached.UID]
	if n := newest(cached, w); n != cached {
		return n.DeepCopy()
	}
	delete(l.written, cached.UID)
	return cached.DeepCopy()
}

func (l *ledger) wrote(ws *appsv1alpha1.WorkloadSpread) {
	l.mu.Lock()
	l.written[ws.UID] = ws
	l.mu.Unlock()
}

func (l *ledger) lock(uid types.UID) *entryLock {
	l.mu.Lock()
	e := l.locks[uid]
	if e == nil {
		e = &entryLock{}
		l.locks[uid] = e
	}
	e.users++
	l.mu.Unlock()
	e.Lock()
	return e
}

// unlock releases e; the last user forgets the lock.
func (l *ledger) unlock(uid types.UID, e *entryLock) {
	e.Unlock()
	l.mu.Lock()
	e.users--
	if e.users == 0 {
		delete(l.locks, uid)
	}
	l.mu.Unlock()
}

// update applies change to a copy of ws (the newest this replica knows) and writes its status
// when change says so, reading the spread live and applying change again on each conflict. It
// returns change's result of the status written (or of the last copy when nothing was written),
// and whether anything was written. gone is true when the spread no longer exists.
func update[R any](ctx context.Context, l *ledger, ws *appsv1alpha1.WorkloadSpread, dryRun bool,
	change func(ws *appsv1alpha1.WorkloadSpread) (R, bool, error)) (result R, written, gone bool, err error) {
	e := l.lock(ws.UID)
	defer l.unlock(ws.UID, e)
	cur := l.start(ws)
	for attempt := 0; ; attempt++ {
		r, changed, err := change(cur)
		if err != nil || !changed || dryRun {
			return r, false, false, err
		}
		out, err := l.spreads.UpdateStatus(ctx, cur)
		switch {
		case err == nil:
			l.wrote(out)
			return r, true, false, nil
		case apierrors.IsNotFound(err):
			return r, false, true, nil
		case !apierrors.IsConflict(err):
			return r, false, false, fmt.Errorf("writing the status of WorkloadSpread %s/%s: %w", ws.Namespace, ws.Name, err)
		case attempt+1 >= writeAttempts:
			return r, false, false, fmt.Errorf("writing the status of WorkloadSpread %s/%s: still conflicting after %d attempts: %w", ws.Namespace, ws.Name, writeAttempts, err)
		}
		live, err := l.spreads.Get(ctx, ws.Namespace, ws.Name)
		if apierrors.IsNotFound(err) {
			return r, false, true, nil
		}
		if err != nil {
			return r, false, false, fmt.Errorf("reading WorkloadSpread %s/%s again after a conflict: %w", ws.Namespace, ws.Name, err)
		}
		cur = live.DeepCopy()
	}
}

// newest is whichever of the cached and the last written copy has the higher resourceVersion
// (etcd's revisions are integers; one that is not is taken as older).
func newest(cached, written *appsv1alpha1.WorkloadSpread) *appsv1alpha1.WorkloadSpread {
	if written == nil || written.UID != cached.UID {
		return cached
	}
	c, err1 := strconv.ParseUint(cached.ResourceVersion, 10, 64)
	w, err2 := strconv.ParseUint(written.ResourceVersion, 10, 64)
	if err1 == nil && err2 == nil && w > c {
		return written
	}
	return cached
}
