package cronjobs

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// MaxMissed is how many missed start times a sync walks through before it reports "too many"
// (the built-in CronJob's bound). Beyond it the most recent one is still found, without walking.
const MaxMissed = 100

// Due is what the schedule asks for at one moment.
type Due struct {
	// Run is the most recent start time not yet run that may still start now; zero: none.
	Run time.Time
	// Missed is how many start times passed unrun (Run among them), counted up to MaxMissed+1.
	Missed int
	// TooMany: more than MaxMissed start times passed unrun (a long outage, a clock set wrong or a
	// startingDeadlineSeconds far too large). Only Run starts; the rest are skipped. The built-in
	// CronJob does the same and warns; OpenKruise stops scheduling the object instead.
	TooMany bool
	// Skipped: at least one start time passed unrun and is now older than
	// startingDeadlineSeconds; it will never run.
	Skipped bool
	// Next is the first start time after now; zero when the schedule has none (the parser looks
	// five years ahead).
	Next time.Time
}

// DueAt decides which run of acj is due at now, as the built-in CronJob decides it: start times
// are counted from the last scheduled run (status.lastScheduleTime) or, before the first, from
// the object's creation, and none older than startingDeadlineSeconds; of those passed, only the
// most recent runs, so an outage never causes a burst of runs.
func DueAt(sched cron.Schedule, acj *v1beta1.AdvancedCronJob, now time.Time) Due {
	base := acj.CreationTimestamp.Time
	if last := acj.Status.LastScheduleTime; last != nil {
		base = last.Time
	}
	earliest := base
	var d Due
	if s := acj.Spec.StartingDeadlineSeconds; s != nil {
		cut := now.Add(-time.Duration(*s) * time.Second)
		if cut.After(base) {
			earliest = cut
			if t := sched.Next(base); !t.IsZero() && !t.After(cut) {
				d.Skipped = true
			}
		}
	}
	d.Next = sched.Next(now)
	if earliest.After(now) {
		return d
	}
	for t := sched.Next(earliest); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		d.Missed++
		d.Run = t
		if d.Missed > MaxMissed {
			d.TooMany = true
			d.Run = latestUpTo(sched, earliest, now)
			break
		}
	}
	if s := acj.Spec.StartingDeadlineSeconds; s != nil && !d.Run.IsZero() && d.Run.Add(time.Duration(*s)*time.Second).Before(now) {
		// Only reachable with a deadline of a few seconds and a slow walk; kept so that the
		// rule reads as the built-in's.
		d.Run, d.Skipped = time.Time{}, true
	}
	return d
}

// latestUpTo is the last start time in (after, now], zero if none, found by looking back in
// windows that double, so that a dense schedule after a long outage costs a few steps, not one
// per missed minute.
func latestUpTo(sched cron.Schedule, after, now time.Time) time.Time {
	for w := time.Minute; ; w *= 2 {
		from := now.Add(-w)
		whole := !from.After(after)
		if whole {
			from = after
		}
		var last time.Time
		for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			last = t
		}
		if !last.IsZero() || whole {
			return last
		}
	}
}
