package cloneset

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/claimupdate"
)

// writeStatus writes the CloneSet's status from the pass, with the pass's scale and update
// failures in FailedScale and FailedUpdate; it returns when to look again for the progress
// deadline.
func (c *Controller) writeStatus(ctx context.Context, p *pass, scaleErr, updateErr error) (time.Duration, error) {
	cs := p.cs
	counts := Tally(p.pods, p.history.UpdateName(), cs.Spec.MinReadySeconds, p.now)
	st := cs.Status.DeepCopy()
	st.ObservedGeneration = cs.Generation
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas = counts.Replicas, counts.Ready, counts.Available
	st.UpdatedReplicas, st.UpdatedReadyReplicas, st.UpdatedAvailableReplicas = counts.Updated, counts.UpdatedReady, counts.UpdatedAvailable
	st.ExpectedUpdatedReplicas = int32(p.budget.Replicas - p.budget.Partition)
	st.UpdateRevision = p.history.UpdateName()
	st.CurrentRevision = p.history.CurrentName()
	if counts.Updated == counts.Replicas && int(counts.Replicas) == p.budget.Replicas {
		// Every pod is at the update revision: it is current, ready or not (as the reference).
		st.CurrentRevision = st.UpdateRevision
	}
	if p.history.CollisionCount != 0 || st.CollisionCount != nil {
		n := p.history.CollisionCount
		st.CollisionCount = &n
	}
	st.LabelSelector = p.selector.String()

	now := metav1.NewTime(p.now)
	failedUpdate := p.refused
	if updateErr != nil {
		failedUpdate = append(failedUpdate, updateErr.Error())
	}
	setFailure(st, appsv1beta1.CloneSetConditionFailedUpdate, "UpdateFailed", strings.Join(failedUpdate, "; "), now)
	failedScale := ""
	if scaleErr != nil {
		failedScale = scaleErr.Error()
	}
	setFailure(st, appsv1beta1.CloneSetConditionFailedScale, "ScaleFailed", failedScale, now)
	// Pods waiting for a budget: said while they wait; cleared once a pass that got as far as
	// disrupting pods found none held back.
	if waits := p.waits.List(); len(waits) > 0 || p.budgetSettled {
		setFailure(st, appsv1beta1.CloneSetConditionPodUnavailableBudgetWait, budgetwait.ConditionReason(waits), budgetwait.Message(waits), now)
	}

	if p.claimsChecked {
		setFailure(st, appsv1beta1.CloneSetConditionType(claimupdate.ConditionType), claimupdate.ConditionType, claimupdate.Message(p.claimRefusals), now)
	}

	var before Counts
	before.Replicas, before.Ready, before.Available = cs.Status.Replicas, cs.Status.ReadyReplicas, cs.Status.AvailableReplicas
	before.Updated, before.UpdatedReady, before.UpdatedAvailable = cs.Status.UpdatedReplicas, cs.Status.UpdatedReadyReplicas, cs.Status.UpdatedAvailableReplicas
	var last *Condition
	if lc := findCondition(st, appsv1beta1.CloneSetConditionTypeProgressing); lc != nil {
		last = &Condition{Status: lc.Status, Reason: lc.Reason, Message: lc.Message, LastUpdateTime: lc.LastUpdateTime.Time}
	}
	paused := cs.Spec.UpdateStrategy.RollingUpdate != nil && cs.Spec.UpdateStrategy.RollingUpdate.Paused
	prog, after := Progressing(ProgressInput{
		DeadlineSeconds: cs.Spec.ProgressDeadlineSeconds, Paused: paused, Replicas: int32(p.budget.Replicas),
		ExpectedUpdated: st.ExpectedUpdatedReplicas, UpdateRevision: st.UpdateRevision,
		Before: before, Now: counts, RevisionChanged: cs.Status.UpdateRevision != st.UpdateRevision, Last: last, At: p.now,
	})
	if prog == nil {
		removeCondition(st, appsv1beta1.CloneSetConditionTypeProgressing)
	} else {
		setCondition(st, appsv1beta1.CloneSetCondition{Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: prog.Status,
			Reason: prog.Reason, Message: prog.Message, LastUpdateTime: metav1.NewTime(prog.LastUpdateTime)}, now)
	}

	if apiequality.Semantic.DeepEqual(st, &cs.Status) {
		return after, nil
	}
	out := cs.DeepCopy()
	out.Status = *st
	_, err := c.kruiseClient.AppsV1beta1().CloneSets(cs.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("writing status: %w", err)
	}
	// Only once the condition is written: a failed write is retried with the transition still
	// ahead, so the Event is neither lost nor repeated.
	if cs.Spec.ProgressDeadlineSeconds != nil {
		if msg := DeadlineExceededEvent(last, prog, st.UpdateRevision, *cs.Spec.ProgressDeadlineSeconds); msg != "" {
			c.recorder.Event(cs, corev1.EventTypeWarning, ReasonProgressDeadlineExceeded, msg)
		}
	}
	return after, nil
}

// setFailure sets a failure condition True with message, or removes it when message is empty.
func setFailure(st *appsv1beta1.CloneSetStatus, t appsv1beta1.CloneSetConditionType, reason, message string, now metav1.Time) {
	if message == "" {
		removeCondition(st, t)
		return
	}
	if old := findCondition(st, t); old != nil && old.Status == corev1.ConditionTrue && old.Reason == reason && old.Message == message {
		return // the same failure: no write for it
	}
	setCondition(st, appsv1beta1.CloneSetCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastUpdateTime: now}, now)
}

// setCondition puts c into st, keeping lastTransitionTime while the status does not change.
func setCondition(st *appsv1beta1.CloneSetStatus, c appsv1beta1.CloneSetCondition, now metav1.Time) {
	c.LastTransitionTime = now
	if old := findCondition(st, c.Type); old != nil {
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.LastUpdateTime.Equal(&c.LastUpdateTime) {
			return
		}
		*old = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

func findCondition(st *appsv1beta1.CloneSetStatus, t appsv1beta1.CloneSetConditionType) *appsv1beta1.CloneSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func removeCondition(st *appsv1beta1.CloneSetStatus, t appsv1beta1.CloneSetConditionType) {
	out := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
	if len(out) == 0 {
		st.Conditions = nil
	}
}
