package cloneset

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/workload/podstate"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Reasons of the Progressing condition (OpenKruise's values).
const (
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonPaused                   = "CloneSetPaused"
	ReasonProgressing              = "CloneSetUpdated"
	ReasonPartitionAvailable       = "ProgressPartitionAvailable"
	ReasonAvailable                = "CloneSetAvailable"
	progressingMessage             = "CloneSet is progressing"
	availableMessage               = "CloneSet is available"
	pausedMessage                  = "CloneSet is paused"
	partitionAvailableMessage      = "CloneSet has been paused due to partition ready"
	// deadlineExceededMessageFormat is OpenKruise's message word for word: clients match it.
	deadlineExceededMessageFormat = "CloneSet revision %s has timed out progressing"
	// deadlineExceededEventFormat says why, in the Event that goes with the condition.
	deadlineExceededEventFormat = "CloneSet revision %s has timed out progressing: no pod updated, ready or available for %ds"
)

// Counts are a CloneSet's pod counts as its status reports them.
type Counts struct {
	Replicas, Ready, Available, Updated, UpdatedReady, UpdatedAvailable int32
}

// Tally counts active pods into status counts: pods at updateRevision are updated.
func Tally(pods []*corev1.Pod, updateRevision string, minReadySeconds int32, now time.Time) Counts {
	var c Counts
	for _, p := range pods {
		c.Replicas++
		updated := revision.PodAt(p, updateRevision)
		if updated {
			c.Updated++
		}
		if podstate.Ready(p) {
			c.Ready++
			if updated {
				c.UpdatedReady++
			}
		}
		if podstate.Available(p, minReadySeconds, now) {
			c.Available++
			if updated {
				c.UpdatedAvailable++
			}
		}
	}
	return c
}

// Condition is the Progressing condition, as far as the decision needs it.
type Condition struct {
	Status         corev1.ConditionStatus
	Reason         string
	Message        string
	LastUpdateTime time.Time
}

// ProgressInput is what the Progressing condition is decided from.
type ProgressInput struct {
	// DeadlineSeconds is spec.progressDeadlineSeconds; nil or MaxInt32 means no deadline, and
	// then there is no Progressing condition.
	DeadlineSeconds *int32
	Paused          bool
	Replicas        int32
	// ExpectedUpdated is replicas minus the partition.
	ExpectedUpdated int32
	UpdateRevision  string
	// Before and Now are the counts at the last status write and now.
	Before, Now Counts
	// RevisionChanged: the update revision differs from the one in status (a new rollout).
	RevisionChanged bool
	// Last is the current Progressing condition, if any.
	Last *Condition
	At   time.Time
}

// Progressing decides the Progressing condition, and when to look again for the deadline; nil
// means no condition. Progress is what the built-in Deployment calls it: a new rollout, or more
// pods updated, ready or available than at the last write; each refreshes LastUpdateTime, and the
// deadline counts from there. (OpenKruise counts it from when the rollout started.)
func Progressing(in ProgressInput) (*Condition, time.Duration) {
	if in.DeadlineSeconds == nil || *in.DeadlineSeconds == math.MaxInt32 {
		return nil, 0
	}
	deadline := time.Duration(*in.DeadlineSeconds) * time.Second
	set := func(status corev1.ConditionStatus, reason, msg string, progressed bool) *Condition {
		c := &Condition{Status: status, Reason: reason, Message: msg, LastUpdateTime: in.At}
		if in.Last != nil && in.Last.Status == status && in.Last.Reason == reason && !progressed {
			c.LastUpdateTime = in.Last.LastUpdateTime
		}
		return c
	}
	n := in.Now
	switch {
	case n.Replicas == in.Replicas && n.Updated == in.Replicas && n.UpdatedAvailable == in.Replicas:
		return set(corev1.ConditionTrue, ReasonAvailable, availableMessage, false), 0
	case in.Paused:
		return set(corev1.ConditionTrue, ReasonPaused, pausedMessage, false), 0
	case in.ExpectedUpdated < in.Replicas && n.UpdatedAvailable >= in.ExpectedUpdated:
		return set(corev1.ConditionTrue, ReasonPartitionAvailable, partitionAvailableMessage, false), 0
	}
	// A new rollout, or one resumed after a pause or after it was available, starts the clock.
	fresh := in.RevisionChanged || in.Last == nil ||
		(in.Last.Reason != ReasonProgressing && in.Last.Reason != ReasonProgressDeadlineExceeded)
	moved := n.Updated > in.Before.Updated || n.UpdatedReady > in.Before.UpdatedReady ||
		n.Ready > in.Before.Ready || n.Available > in.Before.Available
	progressed := fresh || moved
	exceededMessage := fmt.Sprintf(deadlineExceededMessageFormat, in.UpdateRevision)
	if !progressed && in.Last.Status == corev1.ConditionFalse && in.Last.Reason == ReasonProgressDeadlineExceeded {
		// The message is rewritten, so that one written by an earlier kruise matches too.
		c := *in.Last
		c.Message = exceededMessage
		return &c, 0
	}
	c := set(corev1.ConditionTrue, ReasonProgressing, progressingMessage, progressed)
	if left := c.LastUpdateTime.Add(deadline).Sub(in.At); left > 0 {
		return c, left
	}
	return &Condition{Status: corev1.ConditionFalse, Reason: ReasonProgressDeadlineExceeded,
		Message: exceededMessage, LastUpdateTime: in.At}, 0
}

// DeadlineExceededEvent is the Warning Event's message when next turns the Progressing condition
// to ProgressDeadlineExceeded from last, and "" otherwise: one Event per transition, not one per
// pass while it stays exceeded.
func DeadlineExceededEvent(last, next *Condition, updateRevision string, deadlineSeconds int32) string {
	if next == nil || next.Reason != ReasonProgressDeadlineExceeded {
		return ""
	}
	if last != nil && last.Reason == ReasonProgressDeadlineExceeded {
		return ""
	}
	return fmt.Sprintf(deadlineExceededEventFormat, updateRevision, deadlineSeconds)
}
