package cronjobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC) // a Monday

func acjAt(schedule string, created time.Time, last *time.Time, deadline *int64) *v1beta1.AdvancedCronJob {
	a := &v1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1beta1.AdvancedCronJobSpec{Schedule: schedule, StartingDeadlineSeconds: deadline},
	}
	if last != nil {
		a.Status.LastScheduleTime = &metav1.Time{Time: *last}
	}
	return a
}

func due(t *testing.T, a *v1beta1.AdvancedCronJob, now time.Time) Due {
	t.Helper()
	s, err := SpecSchedule(&a.Spec)
	require.NoError(t, err)
	return DueAt(s, a, now)
}

func TestDueAtNothingYet(t *testing.T) {
	d := due(t, acjAt("0 * * * *", t0.Add(time.Minute), nil, nil), t0.Add(30*time.Minute))
	assert.True(t, d.Run.IsZero(), "created after 12:00, nothing due before 13:00")
	assert.Equal(t, t0.Add(time.Hour), d.Next)
	assert.Zero(t, d.Missed)
}

func TestDueAtOnTime(t *testing.T) {
	d := due(t, acjAt("0 * * * *", t0.Add(-time.Minute), nil, nil), t0)
	assert.Equal(t, t0, d.Run, "a start time equal to now is due")
	assert.Equal(t, 1, d.Missed)
	assert.Equal(t, t0.Add(time.Hour), d.Next)
}

func TestDueAtAfterOutageRunsOnlyTheLatest(t *testing.T) {
	last := t0.Add(-5 * time.Hour)
	d := due(t, acjAt("0 * * * *", t0.Add(-24*time.Hour), &last, nil), t0.Add(10*time.Minute))
	assert.Equal(t, t0, d.Run, "one catch-up, the most recent start time")
	assert.Equal(t, 5, d.Missed)
	assert.False(t, d.TooMany)
	assert.False(t, d.Skipped)
}

func TestDueAtLastScheduleTimeIsNotRunAgain(t *testing.T) {
	last := t0
	d := due(t, acjAt("0 * * * *", t0.Add(-24*time.Hour), &last, nil), t0.Add(10*time.Minute))
	assert.True(t, d.Run.IsZero(), "the run at lastScheduleTime was made")
	assert.Equal(t, t0.Add(time.Hour), d.Next)
}

func TestDueAtStartingDeadline(t *testing.T) {
	last := t0.Add(-time.Hour)
	a := acjAt("0 * * * *", t0.Add(-24*time.Hour), &last, ptr.To[int64](300))
	d := due(t, a, t0.Add(4*time.Minute))
	assert.Equal(t, t0, d.Run, "4 minutes late, within the 5 minute deadline")
	assert.False(t, d.Skipped)

	d = due(t, a, t0.Add(6*time.Minute))
	assert.True(t, d.Run.IsZero(), "6 minutes late: too late")
	assert.True(t, d.Skipped, "a start time was passed over")
	assert.Equal(t, t0.Add(time.Hour), d.Next)
}

func TestDueAtTooManyMissedStillRunsTheLatest(t *testing.T) {
	last := t0.Add(-48 * time.Hour)
	now := t0.Add(30 * time.Second)
	d := due(t, acjAt("* * * * *", t0.Add(-72*time.Hour), &last, nil), now)
	assert.True(t, d.TooMany)
	assert.Equal(t, MaxMissed+1, d.Missed, "counting stops past the bound")
	assert.Equal(t, t0, d.Run, "the most recent start time, as the built-in CronJob")
	assert.Equal(t, t0.Add(time.Minute), d.Next)

	// A sparse schedule whose latest start is far behind the bound's walk.
	last = t0.Add(-200 * 24 * time.Hour)
	d = due(t, acjAt("0 12 * * 1", last, &last, nil), now)
	assert.False(t, d.TooMany, "28 Mondays")
	assert.Equal(t, t0, d.Run)
	d = due(t, acjAt("0 12,13 * * *", last, &last, nil), now)
	assert.True(t, d.TooMany, "400 starts")
	assert.Equal(t, t0, d.Run)
}

func TestDueAtTimeZone(t *testing.T) {
	// 20:00 in Shanghai is 12:00 UTC.
	a := acjAt("0 20 * * *", t0.Add(-time.Hour), nil, nil)
	a.Spec.TimeZone = ptr.To("Asia/Shanghai")
	d := due(t, a, t0.Add(time.Minute))
	assert.True(t, t0.Equal(d.Run), "run %v", d.Run)
	assert.True(t, t0.Add(24*time.Hour).Equal(d.Next))
}

// Daylight saving time: the parser the built-in CronJob uses decides, so an AdvancedCronJob
// behaves as a CronJob with the same schedule and timeZone: a start time that does not exist
// (spring forward) is skipped, one that happens twice (fall back) runs twice.
func TestDueAtDaylightSavingTime(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	a := acjAt("30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), nil, nil)
	a.Spec.TimeZone = ptr.To("America/New_York")
	d := due(t, a, time.Date(2026, 3, 8, 12, 0, 0, 0, ny))
	assert.True(t, d.Run.IsZero(), "02:30 did not exist on 8 March, got %v", d.Run)
	assert.True(t, time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC).Equal(d.Next), "next %v", d.Next)

	a = acjAt("30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), nil, nil)
	a.Spec.TimeZone = ptr.To("America/New_York")
	first := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC) // 01:30 EDT
	d = due(t, a, first)
	assert.True(t, first.Equal(d.Run), "run %v", d.Run)
	a.Status.LastScheduleTime = &metav1.Time{Time: d.Run}
	d = due(t, a, first.Add(90*time.Minute))
	assert.True(t, first.Add(time.Hour).Equal(d.Run), "01:30 EST runs too, got %v", d.Run)
}
