package statefulset

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/claimupdate"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// Counts are a set's pods counted for its status.
type Counts struct {
	Replicas, Ready, Available, Current, Updated, UpdatedReady, UpdatedAvailable int32
}

// Tally counts the set's pods that are not being deleted: all of them (replicas), the ready
// and available ones, those at the current and at the update revision.
func Tally(pods []*corev1.Pod, current, update string, minReadySeconds int32, now time.Time) Counts {
	var c Counts
	for _, pod := range pods {
		if Terminating(pod) {
			continue
		}
		c.Replicas++
		ready := podstate.Ready(pod)
		available := podstate.Available(pod, minReadySeconds, now)
		if ready {
			c.Ready++
		}
		if available {
			c.Available++
		}
		switch podstate.Revision(pod) {
		case update:
			c.Updated++
			if ready {
				c.UpdatedReady++
			}
			if available {
				c.UpdatedAvailable++
			}
			if update == current {
				c.Current++
			}
		case current:
			c.Current++
		}
	}
	return c
}

// writeStatus writes the set's status from the pass.
func (c *Controller) writeStatus(ctx context.Context, p *pass) error {
	set := p.set
	update, current := p.history.UpdateName(), p.history.CurrentName()
	// Every wanted ordinal has a pod at the update revision and no other pod is left: the
	// update revision becomes the current one, as the built-in controller does. (Slots are the
	// wanted ordinals that have pods, so all pods are in them when none is condemned.)
	done := p.missing == 0 && len(p.slots) == len(p.pods)
	for _, s := range p.slots {
		if Terminating(s.Pod) || podstate.Revision(s.Pod) != update {
			done = false
		}
	}
	if done {
		current = update
	}
	counts := Tally(p.pods, current, update, p.minReady, p.now)
	st := set.Status.DeepCopy()
	st.ObservedGeneration = set.Generation
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas = counts.Replicas, counts.Ready, counts.Available
	st.CurrentReplicas, st.UpdatedReplicas = counts.Current, counts.Updated
	st.UpdatedReadyReplicas, st.UpdatedAvailableReplicas = counts.UpdatedReady, counts.UpdatedAvailable
	st.CurrentRevision, st.UpdateRevision = current, update
	if p.history.CollisionCount != 0 || st.CollisionCount != nil {
		n := p.history.CollisionCount
		st.CollisionCount = &n
	}
	st.LabelSelector = p.selector.String()
	now := metav1.NewTime(p.now)
	if p.scaled || len(p.failedCreate) > 0 {
		setFailure(st, appsv1beta1.FailedCreatePod, strings.Join(p.failedCreate, "; "), now)
	}
	if p.rolled || len(p.failedUpdate) > 0 {
		setFailure(st, appsv1beta1.FailedUpdatePod, strings.Join(p.failedUpdate, "; "), now)
	}
	if waits := p.waits.List(); p.rolled || len(waits) > 0 {
		setCondition(st, appsv1beta1.PodUnavailableBudgetWait, budgetwait.ConditionReason(waits), budgetwait.Message(waits), now)
	}
	claimStatus(st, p, func(message string) {
		setCondition(st, appsv1.StatefulSetConditionType(claimupdate.ConditionType), claimupdate.ConditionType, message, now)
	})
	if apiequality.Semantic.DeepEqual(st, &set.Status) {
		return nil
	}
	out := set.DeepCopy()
	out.Status = *st
	_, err := c.kruiseClient.AppsV1beta1().StatefulSets(set.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// setFailure sets condition t True with message, or removes it when message is empty.
func setFailure(st *appsv1beta1.StatefulSetStatus, t appsv1.StatefulSetConditionType, message string, now metav1.Time) {
	setCondition(st, t, string(t), message, now)
}

// setCondition sets condition t True with reason and message, or removes it when message is
// empty.
func setCondition(st *appsv1beta1.StatefulSetStatus, t appsv1.StatefulSetConditionType, reason, message string, now metav1.Time) {
	var kept []appsv1.StatefulSetCondition
	var old *appsv1.StatefulSetCondition
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			old = &st.Conditions[i]
			continue
		}
		kept = append(kept, st.Conditions[i])
	}
	if message == "" {
		st.Conditions = kept
		return
	}
	if old != nil && old.Status == corev1.ConditionTrue && old.Reason == reason && old.Message == message {
		return
	}
	st.Conditions = append(kept, appsv1.StatefulSetCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason,
		Message: message, LastTransitionTime: now})
}
