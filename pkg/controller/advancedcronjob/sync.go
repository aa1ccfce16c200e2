package advancedcronjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// wakeSlack is added to the wait for the next run, so that the queue never hands the key back
// a hair before the scheduled time (the built-in CronJob adds the same).
const wakeSlack = 100 * time.Millisecond

// sync brings one AdvancedCronJob up to date and says when its next run is due.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	acj, err := c.cronLister.AdvancedCronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil // its jobs go with it (garbage collector)
	}
	if err != nil {
		return 0, err
	}
	if acj.DeletionTimestamp != nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	kind := cronjobs.KindOf(&acj.Spec)
	if kind == "" {
		c.recorder.Event(acj, corev1.EventTypeWarning, ReasonNoTemplate, "The AdvancedCronJob has no template: nothing to run")
		return 0, nil
	}
	jobs, err := c.children(acj, kind)
	if err != nil {
		return 0, err
	}
	o := observe(acj, kind, jobs)
	c.trim(ctx, acj, o.succeeded, acj.Spec.SuccessfulJobsHistoryLimit)
	c.trim(ctx, acj, o.failed, acj.Spec.FailedJobsHistoryLimit)

	after, err := c.schedule(ctx, acj, kind, &o)
	if serr := c.writeStatus(ctx, acj, o.status); serr != nil {
		return 0, serr
	}
	if err != nil {
		return 0, err
	}
	logger.V(4).Info("Synced", "active", len(o.active), "succeeded", len(o.succeeded), "failed", len(o.failed), "nextIn", after)
	return after, nil
}

// schedule starts the run that is due, if any, and returns the wait until the next one (zero:
// none, or only an event can change anything). It records a new run in o.status.
func (c *Controller) schedule(ctx context.Context, acj *v1beta1.AdvancedCronJob, kind v1beta1.TemplateKind, o *observed) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	if acj.Spec.Paused != nil && *acj.Spec.Paused {
		logger.V(4).Info("Paused: no new runs")
		return 0, nil
	}
	sched, err := cronjobs.SpecSchedule(&acj.Spec)
	if err != nil {
		// The webhook refuses these; one stored without it waits for a fix.
		c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonInvalid, "Cannot read the schedule: %v", err)
		return 0, nil
	}
	if _, ok := c.indexers[kind]; !ok {
		c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonPullJobsGateOff,
			"Not creating ImageListPullJobs: feature gate ImagePullJobGate or KruiseDaemon is off in kruise-controller")
		return 0, nil
	}
	now := c.clock.Now()
	cp := acj.DeepCopy()
	cp.Status.LastScheduleTime = o.status.LastScheduleTime
	due := cronjobs.DueAt(sched, cp, now)
	var after time.Duration
	if !due.Next.IsZero() {
		after = due.Next.Sub(now) + wakeSlack
	}
	if due.TooMany {
		c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonTooMany,
			"More than %d start times were missed; starting only the most recent (%s). Set or decrease startingDeadlineSeconds or check the clocks",
			cronjobs.MaxMissed, due.Run.UTC().Format(time.RFC3339))
	}
	if due.Run.IsZero() {
		if due.Skipped {
			c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonMissed,
				"Missed a scheduled start by more than startingDeadlineSeconds (%ds); next run at %s",
				*acj.Spec.StartingDeadlineSeconds, due.Next.UTC().Format(time.RFC3339))
		}
		return after, nil
	}
	name := cronjobs.ChildName(acj.Name, due.Run)
	if _, ok := o.byName[name]; ok {
		// Created by an earlier sync whose status write did not land.
		o.status.LastScheduleTime = later(o.status.LastScheduleTime, due.Run)
		return after, nil
	}
	switch cronjobs.ConcurrencyOf(&acj.Spec) {
	case v1beta1.ForbidConcurrent:
		if len(o.active) > 0 {
			// Not recorded as run: when the active job ends, this run still starts if it is
			// within startingDeadlineSeconds (as the built-in CronJob).
			c.recorder.Eventf(acj, corev1.EventTypeNormal, ReasonAlreadyActive,
				"Not starting the run of %s: %s is still active and concurrencyPolicy is Forbid",
				due.Run.UTC().Format(time.RFC3339), o.active[0].GetName())
			return after, nil
		}
	case v1beta1.ReplaceConcurrent:
		for _, j := range o.active {
			if err := c.remove(ctx, j); err != nil && !apierrors.IsNotFound(err) {
				c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonDeleteFailed, "Cannot delete active %s %s to replace it: %v", kind, j.GetName(), err)
				return 0, fmt.Errorf("deleting active %s %s/%s: %w", kind, j.GetNamespace(), j.GetName(), err)
			}
			c.recorder.Eventf(acj, corev1.EventTypeNormal, ReasonDeleted, "Deleted active %s %s (concurrencyPolicy Replace)", kind, j.GetName())
		}
		o.active, o.status.Active = nil, nil
	}
	child, err := c.start(ctx, acj, kind, due.Run)
	if err != nil {
		return 0, err
	}
	if child == nil {
		return after, nil // the name is taken by someone else's object: reported
	}
	o.active = append(o.active, child)
	o.status.Active = append(o.status.Active, reference(child, kind))
	o.status.LastScheduleTime = later(o.status.LastScheduleTime, due.Run)
	return after, nil
}

// start creates the job of the run at t; nil, nil when its name is held by an object that is
// not acj's (reported in an Event; the next run has another name).
func (c *Controller) start(ctx context.Context, acj *v1beta1.AdvancedCronJob, kind v1beta1.TemplateKind, t time.Time) (cronjobs.Object, error) {
	want, err := cronjobs.ChildFor(acj, t)
	if err != nil {
		return nil, err
	}
	got, err := c.create(ctx, want)
	if err == nil {
		c.recorder.Eventf(acj, corev1.EventTypeNormal, ReasonCreated, "Created %s %s for the run of %s", kind, got.GetName(), t.UTC().Format(time.RFC3339))
		return got, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonCreateFailed, "Cannot create %s %s: %v", kind, want.GetName(), err)
		return nil, fmt.Errorf("creating %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	// Most often ours, created by a sync the cache has not caught up with.
	live, err := c.get(ctx, kind, want.GetNamespace(), want.GetName())
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s, which exists: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	if ref := metav1.GetControllerOfNoCopy(live); ref != nil && ref.UID == acj.UID {
		return live, nil
	}
	c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonCreateFailed, "Cannot create %s %s for the run of %s: an object that is not this AdvancedCronJob's has the name",
		kind, want.GetName(), t.UTC().Format(time.RFC3339))
	return nil, nil
}

// trim deletes the finished jobs beyond limit, oldest first. Best effort, as in OpenKruise: a
// failure is reported and the next sync tries again.
func (c *Controller) trim(ctx context.Context, acj *v1beta1.AdvancedCronJob, finished []cronjobs.Object, limit *int32) {
	for _, j := range cronjobs.OverLimit(finished, limit) {
		if j.GetDeletionTimestamp() != nil {
			continue
		}
		if err := c.remove(ctx, j); err != nil && !apierrors.IsNotFound(err) {
			c.recorder.Eventf(acj, corev1.EventTypeWarning, ReasonDeleteFailed, "Cannot delete finished job %s beyond the history limit: %v", j.GetName(), err)
			continue
		}
		c.recorder.Eventf(acj, corev1.EventTypeNormal, ReasonDeleted, "Deleted finished job %s (history limit)", j.GetName())
	}
}

// writeStatus writes st when it differs from acj's.
func (c *Controller) writeStatus(ctx context.Context, acj *v1beta1.AdvancedCronJob, st v1beta1.AdvancedCronJobStatus) error {
	if apiequality.Semantic.DeepEqual(acj.Status, st) {
		return nil
	}
	cp := acj.DeepCopy()
	cp.Status = st
	if _, err := c.kruiseClient.AppsV1beta1().AdvancedCronJobs(acj.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of AdvancedCronJob %s/%s: %w", acj.Namespace, acj.Name, err)
	}
	return nil
}
