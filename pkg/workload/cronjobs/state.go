package cronjobs

import (
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// State is where a run's job is.
type State int

const (
	// Active: still running (or not started).
	Active State = iota
	// Succeeded: finished well.
	Succeeded
	// Failed: finished badly.
	Failed
)

// StateOf reads a job's state as OpenKruise does: a Job or BroadcastJob is finished when its
// Complete or Failed condition is True; an ImageListPullJob when its completionTime is set,
// succeeded when every ImagePullJob succeeded.
func StateOf(obj Object) State {
	switch o := obj.(type) {
	case *batchv1.Job:
		for _, c := range o.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return Succeeded
			case batchv1.JobFailed:
				return Failed
			}
		}
	case *v1beta1.BroadcastJob:
		for _, c := range o.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case v1beta1.JobComplete:
				return Succeeded
			case v1beta1.JobFailed:
				return Failed
			}
		}
	case *v1beta1.ImageListPullJob:
		if o.Status.CompletionTime != nil {
			if o.Status.Succeeded == o.Status.Desired {
				return Succeeded
			}
			return Failed
		}
	}
	return Active
}

// ScheduledAt is the run time a job's apps.kruise.io/scheduled-at annotation records; false
// when it has none or it does not parse (a job made by hand, say by kubectl kruise create job).
func ScheduledAt(obj metav1.Object) (time.Time, bool) {
	raw, ok := obj.GetAnnotations()[v1beta1.ScheduledAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// startTime is when a job started; nil when it has not.
func startTime(obj Object) *metav1.Time {
	switch o := obj.(type) {
	case *batchv1.Job:
		return o.Status.StartTime
	case *v1beta1.BroadcastJob:
		return o.Status.StartTime
	case *v1beta1.ImageListPullJob:
		return o.Status.StartTime
	}
	return nil
}

// OverLimit returns the finished jobs to delete so that at most limit remain: the oldest by
// start time first (never started counts as oldest; name breaks ties), as OpenKruise trims. A
// nil limit keeps them all; a negative one counts as zero.
func OverLimit(finished []Object, limit *int32) []Object {
	if limit == nil {
		return nil
	}
	keep := max(int(*limit), 0)
	if len(finished) <= keep {
		return nil
	}
	sorted := append([]Object(nil), finished...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := startTime(sorted[i]), startTime(sorted[j])
		switch {
		case a == nil && b == nil:
			return sorted[i].GetName() < sorted[j].GetName()
		case a == nil || b == nil:
			return a == nil
		case !a.Equal(b):
			return a.Before(b)
		}
		return sorted[i].GetName() < sorted[j].GetName()
	})
	return sorted[:len(sorted)-keep]
}
