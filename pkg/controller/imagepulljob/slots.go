package imagepulljob

import (
	"sort"
	"time"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// How a survey counts each node, and how it hands out the free slots.

// activate counts n as active: asked, no result yet.
func (s *survey) activate(n string) {
	s.active++
	s.unfinishedNodes = append(s.unfinishedNodes, n)
}

// fail counts n as failed, for the reason f.
func (s *survey) fail(n string, f v1beta1.NodeFailure) {
	s.failed++
	s.failedNodes = append(s.failedNodes, n)
	s.failures[n] = f
}

// renewWhenDue queues a Never job's result reached at since for renewal
// once period has passed, or notes when it becomes due.
func (s *survey) renewWhenDue(n string, version int64, since time.Time, period time.Duration, now time.Time) {
	at := since.Add(period)
	if !now.Before(at) {
		s.renew = append(s.renew, candidate{node: n, repullFrom: version, renewing: true, since: since})
		return
	}
	if s.nextDue.IsZero() || at.Before(s.nextDue) {
		s.nextDue = at
	}
}

// allot hands up to slots free slots to the unasked nodes, then to the
// results due for renewal, oldest first: a node never asked goes before a
// result that only wants refreshing.
func (s *survey) allot(slots int32) {
	sort.Slice(s.renew, func(i, j int) bool { return s.renew[i].since.Before(s.renew[j].since) })
	for _, cand := range append(s.unasked, s.renew...) {
		if slots <= 0 {
			break
		}
		slots--
		if cand.renewing {
			// A result being renewed is a pull under way again.
			if containsNode(s.failedNodes, cand.node) {
				s.failed--
				s.failedNodes = removeNode(s.failedNodes, cand.node)
				delete(s.failures, cand.node)
			} else {
				s.succeeded--
			}
		}
		s.planNodes[cand.node] = cand.repullFrom
		s.needWrite[cand.node] = true
		s.activate(cand.node)
	}
}

// markWaiting counts the unasked nodes left without a slot.
func (s *survey) markWaiting() {
	for _, cand := range s.unasked {
		if _, ok := s.planNodes[cand.node]; !ok {
			s.pending++
			s.unfinishedNodes = append(s.unfinishedNodes, cand.node)
			s.waiting[cand.node] = true
		}
	}
}

// setRecheck says when the job must be looked at again for its renewals.
func (s *survey) setRecheck(now time.Time, fallback time.Duration) {
	if !s.nextDue.IsZero() {
		s.recheckAfter = max(s.nextDue.Sub(now), time.Second)
	}
	if len(s.renew) > 0 && s.recheckAfter == 0 {
		// Renewals waiting for a slot are looked at when a pull finishes
		// (its status update queues the job); this is a fallback.
		s.recheckAfter = fallback
	}
}
