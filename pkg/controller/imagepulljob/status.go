package imagepulljob

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// A job's status: its message, its write, and the Events that go with it.

// Event reasons recorded on jobs.
const (
	ReasonStarted          = "Started"
	ReasonCompleted        = "Completed"
	ReasonFailed           = "Failed"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonInvalidImage     = "InvalidImage"
	ReasonInvalidSelector  = "InvalidSelector"
)

// FailedPrefix starts the message of a job that was completed as failed
// before it could pull anywhere (an invalid image or selector): such a job
// has nothing desired, succeeded or failed to tell it by.
const FailedPrefix = "Failed: "

// CouldNotRun reports whether the job was completed as failed before it
// could pull anywhere.
func CouldNotRun(status *v1beta1.ImagePullJobStatus) bool {
	return status.CompletionTime != nil && status.Desired == 0 && strings.HasPrefix(status.Message, FailedPrefix)
}

// fail completes the job as failed at once (it cannot run at all).
func (c *Controller) fail(ctx context.Context, job *v1beta1.ImagePullJob, status *v1beta1.ImagePullJobStatus, reason, msg string) (time.Duration, error) {
	status.CompletionTime = ptr.To(metav1.NewTime(c.clock.Now()))
	status.Message = FailedPrefix + msg
	status.Active = 0
	if err := c.writeStatus(ctx, job, status); err != nil {
		return 0, err
	}
	c.recorder.Event(job, corev1.EventTypeWarning, reason, msg)
	c.recorder.Event(job, corev1.EventTypeWarning, ReasonFailed, status.Message)
	c.finish(job.Namespace+"/"+job.Name, job)
	return c.ttlAfter(ctx, job, status.CompletionTime.Time)
}

func (c *Controller) reportCompletion(job *v1beta1.ImagePullJob, status *v1beta1.ImagePullJobStatus, deadline bool) {
	if deadline {
		c.recorder.Event(job, corev1.EventTypeWarning, ReasonDeadlineExceeded, status.Message)
	}
	if status.Failed > 0 {
		c.recorder.Event(job, corev1.EventTypeWarning, ReasonFailed, status.Message)
		return
	}
	c.recorder.Event(job, corev1.EventTypeNormal, ReasonCompleted, status.Message)
}

// writeStatus updates the job's status unless it is unchanged.
func (c *Controller) writeStatus(ctx context.Context, job *v1beta1.ImagePullJob, status *v1beta1.ImagePullJobStatus) error {
	if apiequality.Semantic.DeepEqual(&job.Status, status) {
		return nil
	}
	cp := job.DeepCopy()
	cp.Status = *status
	_, err := c.kruiseClient.AppsV1beta1().ImagePullJobs(job.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	return err
}

// progressMessage is the status message of a running job, e.g.
// "3/10 nodes succeeded, 1 failed, 2 pulling, 4 waiting".
func progressMessage(s *v1beta1.ImagePullJobStatus, pending int32, job *v1beta1.ImagePullJob) string {
	if s.Desired == 0 {
		return "no nodes selected"
	}
	msg := fmt.Sprintf("%d/%d nodes succeeded, %d failed, %d pulling", s.Succeeded, s.Desired, s.Failed, s.Active)
	if pending > 0 {
		msg += fmt.Sprintf(", %d waiting", pending)
		if parallelismOf(job, s.Desired) == 0 {
			msg += " (paused: parallelism is 0)"
		}
	}
	return msg
}
