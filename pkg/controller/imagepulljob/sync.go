package imagepulljob

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/imageref"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

// syncJob decides a job's plan and status.
func (c *Controller) syncJob(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	job, err := c.jobLister.ImagePullJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "imagePullJob", klog.KObj(job))
	ctx = klog.NewContext(ctx, logger)
	old := c.plans.get(key)
	if old != nil && old.uid != string(job.UID) {
		old = nil
	}
	if job.DeletionTimestamp != nil || job.Status.CompletionTime != nil || (old != nil && old.finished) {
		return c.withdraw(ctx, job)
	}
	return c.advance(ctx, key, job, old)
}

// forget drops the plan of a job that is gone: the node syncs drop its
// owner references (they check that the job really is gone).
func (c *Controller) forget(key string) {
	old := c.plans.get(key)
	c.enqueueNodes(c.plans.set(key, nil))
	if old != nil {
		c.enqueueNodes(toSet(c.nodesOwnedBy(old.uid)))
	}
}

// advance takes a running job one sync further: where its nodes stand, its
// status, and the plan the node syncs write.
func (c *Controller) advance(ctx context.Context, key string, job *v1beta1.ImagePullJob, old *plan) (time.Duration, error) {
	now := c.clock.Now()
	status := job.Status.DeepCopy()
	if status.StartTime == nil {
		status.StartTime = ptr.To(metav1.NewTime(now))
	}
	repo, tag, err := imageref.Split(job.Spec.Image)
	if err != nil {
		return c.fail(ctx, job, status, ReasonInvalidImage, err.Error())
	}
	targets, err := c.targets(job)
	if err != nil {
		return c.fail(ctx, job, status, ReasonInvalidSelector, err.Error())
	}
	if job, err = c.protect(ctx, job); err != nil {
		return 0, err
	}

	unusable := c.unusableSecrets(job)
	e := c.evaluate(job, repo, tag, targets, old, status.StartTime.Time, now)
	p := &plan{
		key: key, uid: string(job.UID), repo: repo, tag: tag,
		generation: job.Generation, nodes: e.planNodes, request: buildRequest(job, unusable), full: e.full,
	}
	v := judge(job, e, status.StartTime.Time, now)
	fillStatus(status, job, e, v, int32(len(targets)), now)
	status.Message += secretsNote(unusable, job.Spec.PullSecrets)

	started := job.Status.StartTime == nil
	if err := c.writeStatus(ctx, job, status); err != nil {
		return 0, err
	}
	if started {
		c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonStarted, "Started pulling %s on %d nodes", job.Spec.Image, len(targets))
	}
	c.reportFull(job, old, e)
	if v.complete {
		c.reportCompletion(job, status, v.deadline)
		c.finish(key, job)
		return c.ttlAfter(ctx, job, status.CompletionTime.Time)
	}
	c.publish(job, old, p, e.needWrite)
	return v.after, nil
}

// verdict is whether a sync completes the job, and if not when to look
// again (0: on the next event).
type verdict struct {
	after time.Duration
	// complete: the job completes now; deadline: because its
	// activeDeadlineSeconds passed with nodes unfinished.
	complete, deadline bool
}

// judge decides whether the job completes: a Never job does not (it looks
// again when a result is due for renewal); another completes when no node is
// left to pull or at its deadline, whatever is unfinished.
func judge(job *v1beta1.ImagePullJob, e evaluation, start, now time.Time) verdict {
	var v verdict
	if neverPolicy(job) {
		v.after = e.recheckAfter
		return v
	}
	if ads := job.Spec.CompletionPolicy.ActiveDeadlineSeconds; ads != nil {
		end := start.Add(durations.Seconds(*ads))
		if !now.Before(end) {
			v.complete, v.deadline = true, e.active+e.pending > 0
		} else {
			v.after = end.Sub(now)
		}
	}
	if e.active == 0 && e.pending == 0 {
		v.complete = true
	}
	return v
}

// fillStatus sets the status counts, failures, message and completion from
// where the nodes stand and the verdict; what has not finished by the
// deadline counts as failed.
func fillStatus(status *v1beta1.ImagePullJobStatus, job *v1beta1.ImagePullJob, e evaluation, v verdict, desired int32, now time.Time) {
	status.Desired = desired
	status.Active, status.Succeeded, status.Failed = e.active, e.succeeded, e.failed
	status.FailedNodes = e.failedNodes
	records := e.failures
	pending := e.pending
	if v.deadline {
		status.Failed += e.active + e.pending
		status.FailedNodes = append(status.FailedNodes, e.unfinishedNodes...)
		sort.Strings(status.FailedNodes)
		status.Active, pending = 0, 0
		for _, n := range e.unfinishedNodes {
			records[n] = deadlineFailure(n, *job.Spec.CompletionPolicy.ActiveDeadlineSeconds, e.waiting[n], e.lastMessage[n])
		}
	}
	status.Failures, status.OmittedFailures = boundFailures(status.FailedNodes, records)
	status.Message = progressMessage(status, pending, job) + failureNote(status.Failures, status.OmittedFailures)
	if v.complete {
		status.CompletionTime = ptr.To(metav1.NewTime(now))
	}
	switch {
	case v.deadline:
		status.Message = fmt.Sprintf("Deadline of %ds exceeded: %s", *job.Spec.CompletionPolicy.ActiveDeadlineSeconds, status.Message)
	case v.complete:
		status.Message = "Completed: " + status.Message
	}
}

// publish sets the job's new plan and queues the nodes whose NodeImage it
// changes: every planned node when the request itself changed, else only
// those still to be written and those the job no longer targets.
func (c *Controller) publish(job *v1beta1.ImagePullJob, old, p *plan, needWrite map[string]bool) {
	touched := c.plans.set(p.key, p)
	if old == nil || old.generation != job.Generation || !slices.Equal(old.request.secrets, p.request.secrets) {
		c.enqueueNodes(touched)
	} else {
		c.enqueueNodes(needWrite)
		for n := range touched {
			if _, ok := p.nodes[n]; !ok {
				c.nodeQueue.Add(n) // no longer targeted
			}
		}
	}
	for _, n := range c.nodesOwnedBy(string(job.UID)) {
		if _, ok := p.nodes[n]; !ok {
			c.nodeQueue.Add(n)
		}
	}
}

// finish publishes an empty, finished plan for the job and queues every node
// still carrying its request.
func (c *Controller) finish(key string, job *v1beta1.ImagePullJob) {
	c.enqueueNodes(c.plans.set(key, &plan{key: key, uid: string(job.UID), finished: true, generation: job.Generation}))
	c.enqueueNodes(toSet(c.nodesOwnedBy(string(job.UID))))
}

// withdraw handles a finished or deleting job: its requests leave every
// NodeImage; it loses the protection finalizer once released (finalizer.go);
// a finished job is deleted ttlSecondsAfterFinished after it completed.
func (c *Controller) withdraw(ctx context.Context, job *v1beta1.ImagePullJob) (time.Duration, error) {
	key := job.Namespace + "/" + job.Name
	if p := c.plans.get(key); p == nil || !p.finished || p.uid != string(job.UID) {
		c.finish(key, job)
	}
	if job.DeletionTimestamp == nil && job.Status.CompletionTime == nil {
		return 0, nil // completed by us; the cache has not caught up
	}
	if err := c.release(ctx, job); err != nil {
		return 0, err
	}
	if job.DeletionTimestamp != nil {
		return 0, nil
	}
	return c.ttlAfter(ctx, job, job.Status.CompletionTime.Time)
}

// ttlAfter deletes the job once ttlSecondsAfterFinished has passed since
// completed, or says when to look again.
func (c *Controller) ttlAfter(ctx context.Context, job *v1beta1.ImagePullJob, completed time.Time) (time.Duration, error) {
	ttl := job.Spec.CompletionPolicy.TTLSecondsAfterFinished
	if ttl == nil || neverPolicy(job) {
		return 0, nil
	}
	at := completed.Add(time.Duration(*ttl) * time.Second)
	if now := c.clock.Now(); now.Before(at) {
		return at.Sub(now), nil
	}
	err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &job.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Deleted finished job after its ttl", "ttlSecondsAfterFinished", *ttl)
	return 0, nil
}

func hasFinalizer(job *v1beta1.ImagePullJob, f string) bool {
	for _, x := range job.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

func toSet(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, x := range list {
		out[x] = true
	}
	return out
}
