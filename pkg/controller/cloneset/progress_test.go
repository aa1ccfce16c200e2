package cloneset

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestProgressing(t *testing.T) {
	deadline := int32(60)
	noDeadline := int32(math.MaxInt32)
	progressing := &Condition{Status: corev1.ConditionTrue, Reason: ReasonProgressing, LastUpdateTime: t0.Add(-30 * time.Second)}
	stale := &Condition{Status: corev1.ConditionTrue, Reason: ReasonProgressing, LastUpdateTime: t0.Add(-61 * time.Second)}
	exceeded := &Condition{Status: corev1.ConditionFalse, Reason: ReasonProgressDeadlineExceeded, Message: "timed out", LastUpdateTime: t0.Add(-5 * time.Second)}
	halfway := Counts{Replicas: 4, Ready: 4, Available: 4, Updated: 2, UpdatedReady: 2, UpdatedAvailable: 2}
	for _, tc := range []struct {
		name       string
		in         ProgressInput
		wantNil    bool
		wantStatus corev1.ConditionStatus
		wantReason string
		wantSince  time.Time
		wantAfter  time.Duration
	}{
		{name: "no deadline, no condition", in: ProgressInput{}, wantNil: true},
		{name: "MaxInt32 is no deadline", in: ProgressInput{DeadlineSeconds: &noDeadline}, wantNil: true},
		{name: "all updated and available", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4,
			Now: Counts{Replicas: 4, Updated: 4, UpdatedAvailable: 4}, Last: progressing},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonAvailable, wantSince: t0},
		{name: "paused", in: ProgressInput{DeadlineSeconds: &deadline, Paused: true, Replicas: 4, ExpectedUpdated: 4, Now: halfway, Last: stale},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonPaused, wantSince: t0},
		{name: "the partition's share is available", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 2, Now: halfway},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonPartitionAvailable, wantSince: t0},
		{name: "a new rollout starts the clock", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4, Now: halfway, Before: halfway, RevisionChanged: true, Last: stale},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonProgressing, wantSince: t0, wantAfter: 60 * time.Second},
		{name: "no progress: the clock runs on", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4, Now: halfway, Before: halfway, Last: progressing},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonProgressing, wantSince: progressing.LastUpdateTime, wantAfter: 30 * time.Second},
		{name: "one more pod updated restarts the clock", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4,
			Before: halfway, Now: Counts{Replicas: 4, Ready: 4, Available: 4, Updated: 3, UpdatedReady: 2, UpdatedAvailable: 2}, Last: progressing},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonProgressing, wantSince: t0, wantAfter: 60 * time.Second},
		{name: "no progress past the deadline", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4, Now: halfway, Before: halfway, Last: stale, UpdateRevision: "web-2"},
			wantStatus: corev1.ConditionFalse, wantReason: ReasonProgressDeadlineExceeded, wantSince: t0},
		{name: "exceeded stays exceeded without progress", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4, Now: halfway, Before: halfway, Last: exceeded},
			wantStatus: corev1.ConditionFalse, wantReason: ReasonProgressDeadlineExceeded, wantSince: exceeded.LastUpdateTime},
		{name: "progress after the deadline clears it", in: ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4,
			Before: halfway, Now: Counts{Replicas: 4, Ready: 4, Available: 4, Updated: 2, UpdatedReady: 3, UpdatedAvailable: 2}, Last: exceeded},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonProgressing, wantSince: t0, wantAfter: 60 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.At = t0
			c, after := Progressing(tc.in)
			if tc.wantNil {
				if c != nil {
					t.Fatalf("condition %+v, want none", c)
				}
				return
			}
			if c == nil {
				t.Fatal("no condition")
			}
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || !c.LastUpdateTime.Equal(tc.wantSince) || after != tc.wantAfter {
				t.Errorf("got %s/%s since %v, look again after %v; want %s/%s since %v, after %v",
					c.Status, c.Reason, c.LastUpdateTime, after, tc.wantStatus, tc.wantReason, tc.wantSince, tc.wantAfter)
			}
			if c.Message == "" {
				t.Error("no message")
			}
		})
	}
}

func TestTally(t *testing.T) {
	rev := func(r string) map[string]string { return map[string]string{"controller-revision-hash": r} }
	pods := []*corev1.Pod{
		readyPod("a", t0.Add(-time.Minute)),
		readyPod("b", t0),
		readyPod("c", t0.Add(-time.Minute)),
	}
	pods[0].Labels, pods[1].Labels, pods[2].Labels = rev("web-2"), rev("web-2"), rev("web-1")
	got := Tally(pods, "web-2", 10, t0)
	want := Counts{Replicas: 3, Ready: 3, Available: 2, Updated: 2, UpdatedReady: 2, UpdatedAvailable: 1}
	if got != want {
		t.Errorf("Tally = %+v, want %+v", got, want)
	}
}

func TestDeadlineExceededMessageIsTheReferences(t *testing.T) {
	deadline := int32(60)
	stale := &Condition{Status: corev1.ConditionTrue, Reason: ReasonProgressing, LastUpdateTime: t0.Add(-61 * time.Second)}
	halfway := Counts{Replicas: 4, Ready: 4, Available: 4, Updated: 2, UpdatedReady: 2, UpdatedAvailable: 2}
	in := ProgressInput{DeadlineSeconds: &deadline, Replicas: 4, ExpectedUpdated: 4, Now: halfway, Before: halfway,
		Last: stale, UpdateRevision: "web-7d9f", At: t0}
	c, _ := Progressing(in)
	const want = "CloneSet revision web-7d9f has timed out progressing"
	if c == nil || c.Message != want {
		t.Fatalf("condition %+v, want message %q", c, want)
	}
	// A condition an earlier kruise wrote, with its detail in the message, is brought to the
	// reference's message without moving its time.
	in.Last = &Condition{Status: corev1.ConditionFalse, Reason: ReasonProgressDeadlineExceeded, LastUpdateTime: t0.Add(-time.Hour),
		Message: "CloneSet revision web-7d9f has timed out progressing: no pod updated, ready or available for 60s"}
	c, _ = Progressing(in)
	if c.Message != want || !c.LastUpdateTime.Equal(t0.Add(-time.Hour)) {
		t.Errorf("kept exceeded condition %+v, want message %q since %v", c, want, t0.Add(-time.Hour))
	}
}

func TestDeadlineExceededEventOncePerTransition(t *testing.T) {
	progressing := &Condition{Status: corev1.ConditionTrue, Reason: ReasonProgressing}
	exceeded := &Condition{Status: corev1.ConditionFalse, Reason: ReasonProgressDeadlineExceeded}
	for _, tc := range []struct {
		name       string
		last, next *Condition
		want       string
	}{
		{name: "progressing to exceeded", last: progressing, next: exceeded,
			want: "CloneSet revision web-2 has timed out progressing: no pod updated, ready or available for 60s"},
		{name: "no condition to exceeded", next: exceeded,
			want: "CloneSet revision web-2 has timed out progressing: no pod updated, ready or available for 60s"},
		{name: "stays exceeded", last: exceeded, next: exceeded},
		{name: "still progressing", last: progressing, next: progressing},
		{name: "progress again", last: exceeded, next: progressing},
		{name: "no deadline", last: progressing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeadlineExceededEvent(tc.last, tc.next, "web-2", 60); got != tc.want {
				t.Errorf("event %q, want %q", got, tc.want)
			}
		})
	}
}
