package daemonset

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// CountStatus computes the status counts as the built-in DaemonSet controller does: per node
// that should run the pod, its oldest pod (ended pods not counted) decides ready, available and
// updated; a node that runs a pod it should not counts as misscheduled.
func CountStatus(nodes []NodeState, updateHash string, minReadySeconds int32, now time.Time) appsv1beta1.DaemonSetStatus {
	var s appsv1beta1.DaemonSetStatus
	for _, n := range nodes {
		var pods []*corev1.Pod
		for _, p := range n.Pods {
			if !(Terminating(p) && Ended(p)) {
				pods = append(pods, p)
			}
		}
		if n.Gone {
			continue // counted by nodes that exist, as the built-in controller counts
		}
		if !n.Eligibility.ShouldRun {
			if len(pods) > 0 {
				s.NumberMisscheduled++
			}
			continue
		}
		s.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		s.CurrentNumberScheduled++
		pods = slices.Clone(pods)
		SortPods(pods)
		pod := pods[0]
		if Ready(pod) {
			s.NumberReady++
			if Available(pod, minReadySeconds, now) {
				s.NumberAvailable++
			}
		}
		if podstate.Revision(pod) == updateHash {
			s.UpdatedNumberScheduled++
		}
	}
	s.NumberUnavailable = max(0, s.DesiredNumberScheduled-s.NumberAvailable)
	return s
}

// writeStatus stores the status of pass p when it changed.
func (c *Controller) writeStatus(ctx context.Context, p *pass) error {
	want := CountStatus(p.nodes, p.history.updateHash(), p.ds.Spec.MinReadySeconds, c.clock.Now())
	want.ObservedGeneration = p.ds.Generation
	want.UpdateRevision = p.history.updateHash()
	cc := p.history.CollisionCount
	want.CollisionCount = &cc
	want.Conditions = budgetCondition(p.ds.Status.Conditions, p, metav1.NewTime(c.clock.Now()))
	if equality.Semantic.DeepEqual(want, p.ds.Status) {
		return nil
	}
	ds := p.ds
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cp := ds.DeepCopy()
		cp.Status = want
		_, err := c.kruiseClient.AppsV1beta1().DaemonSets(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			fresh, getErr := c.kruiseClient.AppsV1beta1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			ds = fresh
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the DaemonSet status: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Wrote status", "desired", want.DesiredNumberScheduled, "current", want.CurrentNumberScheduled,
		"ready", want.NumberReady, "updated", want.UpdatedNumberScheduled, "available", want.NumberAvailable)
	return nil
}

// writeCollisionCount stores a grown collision count, so that the next attempt at creating the
// update revision starts from the next name.
func (c *Controller) writeCollisionCount(ctx context.Context, ds *appsv1beta1.DaemonSet, count int32) {
	cp := ds.DeepCopy()
	cp.Status.CollisionCount = &count
	if _, err := c.kruiseClient.AppsV1beta1().DaemonSets(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
		klog.FromContext(ctx).Error(err, "Writing the collision count failed", "collisionCount", count)
	}
}

// budgetCondition is conditions with PodUnavailableBudgetWait set from the pass's waits, removed
// once a pass that got to the rolling update found none, else as it was. conditions (the cached
// status) is not changed.
func budgetCondition(conditions []appsv1.DaemonSetCondition, p *pass, now metav1.Time) []appsv1.DaemonSetCondition {
	waits := p.waits.List()
	if len(waits) == 0 && !p.budgetSettled {
		return conditions
	}
	var out []appsv1.DaemonSetCondition
	var old *appsv1.DaemonSetCondition
	for i := range conditions {
		if conditions[i].Type == appsv1beta1.DaemonSetPodUnavailableBudgetWait {
			old = &conditions[i]
			continue
		}
		out = append(out, conditions[i])
	}
	if len(waits) == 0 {
		return out
	}
	cond := appsv1.DaemonSetCondition{Type: appsv1beta1.DaemonSetPodUnavailableBudgetWait, Status: corev1.ConditionTrue,
		Reason: budgetwait.ConditionReason(waits), Message: budgetwait.Message(waits), LastTransitionTime: now}
	if old != nil && old.Status == cond.Status {
		if old.Reason == cond.Reason && old.Message == cond.Message {
			cond = *old
		} else {
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	return append(out, cond)
}
