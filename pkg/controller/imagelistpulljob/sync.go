package imagelistpulljob

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/imagepulljob"
)

// sync keeps one ImagePullJob per listed image and the list job's status
// aggregated from theirs.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	list, err := c.listLister.ImageListPullJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil // its ImagePullJobs go with it (garbage collector)
	}
	if err != nil {
		return 0, err
	}
	if list.DeletionTimestamp != nil {
		return 0, nil
	}
	if list.Status.CompletionTime != nil {
		return c.ttlAfter(ctx, list)
	}
	children, err := c.children(list)
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, img := range list.Spec.Images {
		want[img] = true
	}
	if err := c.createMissing(ctx, list, want, children); err != nil {
		return 0, err
	}
	if err := c.deleteUnlisted(ctx, list, want, children); err != nil {
		return 0, err
	}

	st, complete := aggregate(list, children, int32(len(want)), c.clock.Now())
	if !apiequality.Semantic.DeepEqual(&list.Status, st) {
		cp := list.DeepCopy()
		cp.Status = *st
		if _, err := c.kruiseClient.AppsV1beta1().ImageListPullJobs(ns).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			return 0, err
		}
	}
	if !complete {
		return 0, nil
	}
	c.reportCompletion(list, st)
	cp := list.DeepCopy()
	cp.Status = *st
	return c.ttlAfter(ctx, cp)
}

// createMissing creates the ImagePullJob of every wanted image that has none
// and adds it to children.
func (c *Controller) createMissing(ctx context.Context, list *v1beta1.ImageListPullJob, want map[string]bool, children map[string]*v1beta1.ImagePullJob) error {
	for img := range want {
		if _, ok := children[img]; ok {
			continue
		}
		child, err := c.createChild(ctx, list, img)
		if err != nil {
			return err
		}
		children[img] = child
	}
	return nil
}

// createChild creates the ImagePullJob of img, or finds it already created
// by an earlier sync. A failure retrying will not cure is reported on the
// list job as well.
func (c *Controller) createChild(ctx context.Context, list *v1beta1.ImageListPullJob, img string) (*v1beta1.ImagePullJob, error) {
	newJob, lowered := newChild(list, img)
	child, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(list.Namespace).Create(ctx, newJob, metav1.CreateOptions{})
	if err == nil {
		c.recorder.Eventf(list, corev1.EventTypeNormal, ReasonCreated, "Created ImagePullJob %s for %s%s", child.Name, img, lowered)
		return child, nil
	}
	permanent := !isTransient(err)
	if apierrors.IsAlreadyExists(err) {
		// Most often our own child, created by an earlier sync
		// that the cache has not caught up with (our status
		// write queues the next sync at once). Only an object
		// that is not ours is a failure.
		live, owner, gerr := c.existingChild(ctx, list, img)
		if gerr != nil {
			return nil, gerr // retried with backoff
		}
		if live != nil {
			return live, nil
		}
		err = fmt.Errorf("ImagePullJob %s exists and is not this list job's for %s (%s)", ChildName(list.Name, img), img, owner)
	}
	if permanent {
		// Retrying will not help until someone acts: say so
		// where the user looks, and retry with backoff anyway.
		c.recorder.Eventf(list, corev1.EventTypeWarning, ReasonCreateFailed, "Cannot create the ImagePullJob for %s: %v", img, err)
	}
	return nil, err
}

// deleteUnlisted deletes the ImagePullJobs of images no longer listed and
// drops them from children.
func (c *Controller) deleteUnlisted(ctx context.Context, list *v1beta1.ImageListPullJob, want map[string]bool, children map[string]*v1beta1.ImagePullJob) error {
	for img, child := range children {
		if want[img] {
			continue
		}
		err := c.kruiseClient.AppsV1beta1().ImagePullJobs(list.Namespace).Delete(ctx, child.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &child.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		c.recorder.Eventf(list, corev1.EventTypeNormal, ReasonDeleted, "Deleted ImagePullJob %s: %s is no longer listed", child.Name, img)
		delete(children, img)
	}
	return nil
}

// aggregate is the list job's status from its children's, and whether the
// list job completes now: every image completed, unless completionPolicy is
// Never. A wanted image whose child does not exist yet counts as active.
func aggregate(list *v1beta1.ImageListPullJob, children map[string]*v1beta1.ImagePullJob, desired int32, now time.Time) (*v1beta1.ImageListPullJobStatus, bool) {
	st := list.Status.DeepCopy()
	if st.StartTime == nil {
		st.StartTime = ptr.To(metav1.NewTime(now))
	}
	st.Desired = desired
	st.Completed, st.Succeeded, st.Active = 0, 0, 0
	st.FailedImageStatuses = nil
	images := make([]string, 0, len(children))
	for img := range children {
		images = append(images, img)
	}
	sort.Strings(images)
	for _, img := range images {
		j := children[img]
		done := reported(j)
		if done {
			st.Completed++
			if j.Status.Failed == 0 && j.Status.Succeeded == j.Status.Desired && !imagepulljob.CouldNotRun(&j.Status) {
				st.Succeeded++
			}
		} else {
			st.Active++
		}
		if j.Status.Failed > 0 || (done && j.Status.Succeeded != j.Status.Desired) || imagepulljob.CouldNotRun(&j.Status) {
			// The child's message says why (its first failed node's
			// reason); bounded, as there is one entry per failing image.
			st.FailedImageStatuses = append(st.FailedImageStatuses, &v1beta1.FailedImageStatus{
				ImagePullJob: j.Name, Name: img, Message: truncate(j.Status.Message, maxFailedImageMessage),
			})
		}
	}
	st.Active += st.Desired - int32(len(children))
	complete := list.Spec.CompletionPolicy.Type != v1beta1.Never && st.Completed == st.Desired
	if complete {
		st.CompletionTime = ptr.To(metav1.NewTime(now))
	}
	return st, complete
}

// reportCompletion records the Event of a completed list job: a Warning
// naming the first failing image when any failed.
func (c *Controller) reportCompletion(list *v1beta1.ImageListPullJob, st *v1beta1.ImageListPullJobStatus) {
	if len(st.FailedImageStatuses) > 0 {
		first := st.FailedImageStatuses[0]
		c.recorder.Eventf(list, corev1.EventTypeWarning, ReasonFailed, "Completed: %d/%d images pulled on every node, %d failed somewhere (%s: %s)",
			st.Succeeded, st.Desired, len(st.FailedImageStatuses), first.Name, truncate(first.Message, maxEventMessage))
		return
	}
	c.recorder.Eventf(list, corev1.EventTypeNormal, ReasonCompleted, "Completed: %d/%d images pulled on every node", st.Succeeded, st.Desired)
}
