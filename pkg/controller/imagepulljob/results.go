package imagepulljob

import (
	"sync"
	"time"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// A pull result's startTime and completionTime are written by the node's
// daemon with the node's clock. Comparing them with the controller's clock
// (a job's startTime, now) let a node whose clock is off change outcomes:
// another job's old result counted as fresh, a fresh one as old, re-pulls
// and retries early or late. So the controller dates each result itself:
// when it saw it appear in a NodeImage status update, on its own clock.
//
// A result the controller did not see appear (present when it started, or
// in a NodeImage it learned of by an add) has no such date; it is then
// treated the safe way: never fresh for another job (an Always job pulls
// again rather than trust it), and due for renewal by the node's dates,
// never later than now (a re-pull comes early rather than late).

// resultKey names one result of one tag version on a node.
type resultKey struct {
	repo, tag string
	version   int64
	phase     v1beta1.ImagePullPhase
}

// resultTimes holds, per node, when each finished result was first seen
// (the zero time: not seen appear).
type resultTimes struct {
	mu    sync.Mutex
	nodes map[string]map[resultKey]time.Time
}

func newResultTimes() *resultTimes {
	return &resultTimes{nodes: map[string]map[resultKey]time.Time{}}
}

func finished(st *v1beta1.ImageTagStatus) bool {
	return st.Phase == v1beta1.ImagePhaseSucceeded || st.Phase == v1beta1.ImagePhaseFailed
}

// observe records cur's finished results as of now: those already known
// keep their date; those old did not have appeared now; the others (old
// nil: cur was added) are undated. Results no longer reported are
// forgotten.
func (r *resultTimes) observe(old, cur *v1beta1.NodeImage, now time.Time) {
	had := map[resultKey]bool{}
	if old != nil {
		for repo, is := range old.Status.ImageStatuses {
			for i := range is.Tags {
				if st := &is.Tags[i]; finished(st) {
					had[resultKey{repo, st.Tag, st.Version, st.Phase}] = true
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	known := r.nodes[cur.Name]
	next := map[resultKey]time.Time{}
	for repo, is := range cur.Status.ImageStatuses {
		for i := range is.Tags {
			st := &is.Tags[i]
			if !finished(st) {
				continue
			}
			k := resultKey{repo, st.Tag, st.Version, st.Phase}
			switch at, ok := known[k]; {
			case ok:
				next[k] = at
			case old != nil && !had[k]:
				next[k] = now
			default:
				next[k] = time.Time{}
			}
		}
	}
	if len(next) == 0 {
		delete(r.nodes, cur.Name)
		return
	}
	r.nodes[cur.Name] = next
}

// forget drops what is known of a node (its NodeImage was deleted).
func (r *resultTimes) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, node)
}

// seen is when the controller saw the result st of repo on node appear, and
// whether it did.
func (r *resultTimes) seen(node, repo string, st *v1beta1.ImageTagStatus) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.nodes[node][resultKey{repo, st.Tag, st.Version, st.Phase}]
	return at, ok && !at.IsZero()
}

// freshSince reports whether the result was reached at or after start (the
// job's start, controller clock). Undated results are not fresh.
func (r *resultTimes) freshSince(node, repo string, st *v1beta1.ImageTagStatus, start time.Time) bool {
	at, ok := r.seen(node, repo, st)
	return ok && !at.Before(start)
}

// since is the date a result's renewal counts from: when it was seen to
// appear, or for an undated result the node's date of it, but not later
// than now.
func (r *resultTimes) since(node, repo string, st *v1beta1.ImageTagStatus, now time.Time) time.Time {
	if at, ok := r.seen(node, repo, st); ok {
		return at
	}
	if t := resultTime(st); !t.IsZero() && t.Before(now) {
		return t
	}
	return now
}

// resultTime is when a pull result was reached (its start if it has no
// end), on the node's clock: see results.go before comparing it with
// anything.
func resultTime(st *v1beta1.ImageTagStatus) time.Time {
	switch {
	case st.CompletionTime != nil:
		return st.CompletionTime.Time
	case st.StartTime != nil:
		return st.StartTime.Time
	}
	return time.Time{}
}
