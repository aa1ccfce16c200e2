package crr

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
)

// daemonLiveFor is how long after this controller last saw a node's
// heartbeat Lease renewed its daemon counts as live, and how long after
// admission an admitted CRR may wait for one.
const daemonLiveFor = daemonlease.Duration

// liveness tells whether a node's kruise-daemon is live, the way leader
// election and the node lifecycle controller judge a Lease: by when this
// controller observed it change, on its own clock. The renewTime written
// in the Lease is the node's clock; comparing it with ours would count a
// daemon on a node whose clock lags by more than the lease duration as
// dead, and one whose clock runs ahead as live long after it stopped.
type liveness struct {
	clock clock.Clock
	mu    sync.Mutex
	seen  map[string]observation // by node
}

// observation is the renewal of a Lease last seen, and when.
type observation struct {
	renew string // the Lease's renewTime (and holder), as written
	at    time.Time
}

func newLiveness(clk clock.Clock) *liveness {
	return &liveness{clock: clk, seen: map[string]observation{}}
}

// observe records a Lease as the informer delivers it, and returns its
// node ("" for a Lease that is not a daemon heartbeat). The first sight
// of a Lease counts as a renewal: a controller that just started gives
// every daemon one lease duration before it judges it.
func (l *liveness) observe(lease *coordinationv1.Lease) string {
	node, ok := daemonlease.Node(lease.Name)
	if !ok {
		return ""
	}
	renew := renewMark(lease)
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.seen[node]; ok && cur.renew == renew {
		return node
	}
	l.seen[node] = observation{renew: renew, at: l.clock.Now()}
	return node
}

// forget drops a deleted Lease.
func (l *liveness) forget(lease *coordinationv1.Lease) string {
	node, ok := daemonlease.Node(lease.Name)
	if !ok {
		return ""
	}
	l.mu.Lock()
	delete(l.seen, node)
	l.mu.Unlock()
	return node
}

// liveUntil is when node's daemon stops counting as live unless its Lease
// is renewed again; zero when no Lease of it has been seen.
func (l *liveness) liveUntil(node string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.seen[node]
	if !ok {
		return time.Time{}
	}
	return o.at.Add(daemonLiveFor)
}

// renewMark is what changes when a daemon renews its Lease.
func renewMark(lease *coordinationv1.Lease) string {
	var holder, renew string
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if lease.Spec.RenewTime != nil {
		renew = lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return holder + "@" + renew
}
