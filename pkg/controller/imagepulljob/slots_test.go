package imagepulljob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Free slots go to nodes never asked first, then to the oldest result due
// for renewal; a renewed result no longer counts as succeeded or failed.
func TestAllotUnaskedFirstThenOldestRenewal(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSurvey()
	s.succeeded = 1 // "new"
	s.fail("old", nodeFailure("old", "ErrImagePull", "boom"))
	s.unasked = []candidate{{node: "fresh", repullFrom: 3}}
	s.renew = []candidate{
		{node: "new", repullFrom: 5, renewing: true, since: t0.Add(time.Hour)},
		{node: "old", repullFrom: 7, renewing: true, since: t0},
	}
	s.allot(2)
	s.markWaiting()

	assert.Equal(t, map[string]int64{"fresh": 3, "old": 7}, s.planNodes)
	assert.Equal(t, map[string]bool{"fresh": true, "old": true}, s.needWrite)
	assert.Equal(t, int32(2), s.active)
	assert.Equal(t, int32(1), s.succeeded, "the newer result keeps its count")
	assert.Equal(t, int32(0), s.failed)
	assert.Empty(t, s.failedNodes)
	assert.Empty(t, s.failures)
	assert.Equal(t, int32(0), s.pending)
}

// Nodes never asked that get no slot wait, counted as pending.
func TestAllotLeavesTheRestWaiting(t *testing.T) {
	s := newSurvey()
	s.unasked = []candidate{{node: "a"}, {node: "b"}, {node: "c"}}
	s.allot(1)
	s.markWaiting()

	assert.Equal(t, map[string]int64{"a": 0}, s.planNodes)
	assert.Equal(t, int32(1), s.active)
	assert.Equal(t, int32(2), s.pending)
	assert.Equal(t, map[string]bool{"b": true, "c": true}, s.waiting)
	assert.Equal(t, []string{"a", "b", "c"}, s.unfinishedNodes)
}

// A result not yet due sets the recheck, at least a second away; renewals
// left without a slot fall back to the given period.
func TestRenewWhenDueAndRecheck(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSurvey()
	s.renewWhenDue("a", 1, now.Add(-time.Hour), 2*time.Hour, now)
	s.renewWhenDue("b", 1, now.Add(-time.Hour), 90*time.Minute, now)
	s.renewWhenDue("c", 1, now.Add(-time.Hour), time.Hour, now)
	assert.Equal(t, []candidate{{node: "c", repullFrom: 1, renewing: true, since: now.Add(-time.Hour)}}, s.renew)
	s.setRecheck(now, time.Minute)
	assert.Equal(t, 30*time.Minute, s.recheckAfter, "the soonest due result")

	s = newSurvey()
	s.renew = []candidate{{node: "c", renewing: true}}
	s.setRecheck(now, time.Minute)
	assert.Equal(t, time.Minute, s.recheckAfter)
}
