package advancedcronjob

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// observed is what an AdvancedCronJob's jobs say.
type observed struct {
	active, succeeded, failed []cronjobs.Object
	byName                    map[string]cronjobs.Object
	status                    v1beta1.AdvancedCronJobStatus
}

// observe sorts acj's jobs by state and computes the status they give. lastScheduleTime never
// goes back: it is the later of the one recorded and the newest scheduled-at of the jobs. (In
// OpenKruise it comes from the surviving jobs alone, so once the history limit has deleted a
// finished run, the same run is created again: openkruise/kruise#862, #1488.)
func observe(acj *v1beta1.AdvancedCronJob, kind v1beta1.TemplateKind, jobs []cronjobs.Object) observed {
	o := observed{byName: map[string]cronjobs.Object{}}
	o.status.Type = kind
	o.status.LastScheduleTime = acj.Status.LastScheduleTime
	for _, j := range jobs {
		o.byName[j.GetName()] = j
		switch cronjobs.StateOf(j) {
		case cronjobs.Active:
			if j.GetDeletionTimestamp() == nil {
				o.active = append(o.active, j)
			}
		case cronjobs.Succeeded:
			o.succeeded = append(o.succeeded, j)
		case cronjobs.Failed:
			o.failed = append(o.failed, j)
		}
		if at, ok := cronjobs.ScheduledAt(j); ok {
			o.status.LastScheduleTime = later(o.status.LastScheduleTime, at)
		}
	}
	sort.Slice(o.active, func(i, k int) bool { return o.active[i].GetName() < o.active[k].GetName() })
	for _, j := range o.active {
		o.status.Active = append(o.status.Active, reference(j, kind))
	}
	return o
}

// later is the later of t and at, as a status time (seconds, as the API stores them).
func later(t *metav1.Time, at time.Time) *metav1.Time {
	n := metav1.Unix(at.Unix(), 0)
	if t == nil || n.After(t.Time) {
		return &n
	}
	return t
}

// reference is status.active's entry for a job. No resourceVersion: it would change the
// AdvancedCronJob's status at every change of the job's.
func reference(j cronjobs.Object, kind v1beta1.TemplateKind) corev1.ObjectReference {
	apiVersion := v1beta1.SchemeGroupVersion.String()
	if kind == v1beta1.JobTemplate {
		apiVersion = "batch/v1"
	}
	return corev1.ObjectReference{
		APIVersion: apiVersion,
		Kind:       string(kind),
		Namespace:  j.GetNamespace(),
		Name:       j.GetName(),
		UID:        j.GetUID(),
	}
}
