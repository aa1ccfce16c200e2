package cloneset

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/inplace"
	"github.com/nodekruise/kruise/pkg/lifecycle"
	"github.com/nodekruise/kruise/pkg/podorder"
)

// update moves pods along: first every pod's in-place update and lifecycle state, then, when
// none of them needed a write, old pods to the update revision as d allows. It reports whether it
// wrote anything and when to look again.
func (c *Controller) update(ctx context.Context, p *pass, d Diff, facts []PodFacts) (bool, time.Duration, error) {
	var wait time.Duration
	for _, pod := range p.pods {
		if ok, recheck := c.podVersions.Satisfied(ctx, pod); !ok {
			wait = shortest(wait, recheck)
		}
	}
	if wait > 0 {
		return false, wait, nil // a pod's last write is not in the cache yet
	}
	acted, after, err := c.refreshPods(ctx, p)
	if acted || err != nil {
		return acted, after, err
	}
	if why := UnconvertedStrategy(p.cs); why != "" && d.Update > 0 {
		p.refused = append(p.refused, why)
		c.recorder.Event(p.cs, corev1.EventTypeWarning, ReasonUnconvertedStrategy, why)
		return false, after, nil
	}
	us := p.cs.Spec.UpdateStrategy
	if us.Type == appsv1beta1.OnDeleteCloneSetUpdateStrategyType || (us.RollingUpdate != nil && us.RollingUpdate.Paused) || d.Update <= 0 {
		return false, after, nil
	}
	var cands []Candidate
	unavailable := 0
	for i, pod := range p.pods {
		f := facts[i]
		if !f.Available {
			unavailable++
		}
		if f.Updated || f.PreparingDelete || f.SpecifiedDelete {
			continue
		}
		if g, _ := inplace.ReadGrace(pod); g != nil {
			continue
		}
		cands = append(cands, Candidate{Pod: pod, Facts: f})
	}
	var priority *pub.UpdatePriorityStrategy
	var scatter pub.UpdateScatterStrategy
	if us.RollingUpdate != nil {
		priority, scatter = us.RollingUpdate.PriorityStrategy, us.RollingUpdate.ScatterStrategy
	}
	var orderErr error
	order := func(pods []*corev1.Pod) []*corev1.Pod {
		sorted, err := podorder.ForUpdate(pods, priority, scatter)
		if err != nil {
			orderErr = err
			return pods
		}
		return sorted
	}
	chosen := ChooseUpdates(d, cands, unavailable, order)
	if orderErr != nil {
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonInvalidSpec, "updateStrategy.rollingUpdate.priorityStrategy: %v; pods are updated in the default order", orderErr)
	}
	var errs []string
	for _, pod := range chosen {
		wrote, err := c.updatePod(ctx, p, pod)
		acted = acted || wrote
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return acted, after, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return acted, after, nil
}

// updatePod moves one old pod towards the update revision: through its inPlaceUpdate hook, then
// in place, or by asking for its deletion when it must be recreated.
func (c *Controller) updatePod(ctx context.Context, p *pass, pod *corev1.Pod) (bool, error) {
	r := c.route(p, pod)
	if r.Refused != nil {
		p.refused = append(p.refused, fmt.Sprintf("pod %s: %v", pod.Name, r.Refused))
		return false, nil
	}
	if r.Recreate {
		return true, c.markForRecreate(ctx, p, pod)
	}
	dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.cs.Spec.Lifecycle, Want: lifecycle.WantUpdate})
	switch dec.Action {
	case lifecycle.ActionSetState:
		return true, c.setLifecycleState(ctx, p, pod, dec)
	case lifecycle.ActionUpdate:
	default:
		return false, nil
	}
	update := p.history.updateName()
	target := inplace.Target{
		Revision: update, RevisionLabelKey: appsv1.ControllerRevisionHashLabelKey, RevisionLabelValue: update,
		Mutate: func(out *corev1.Pod) {
			lifecycle.SetState(out, pub.LifecycleStateUpdating, c.clock)
			out.Labels[PodTemplateHashLabel] = ShortRevision(p.cs.Name, update)
		},
	}
	var grace int32
	if ru := p.cs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		grace = ru.InPlaceUpdateStrategy.GracePeriodSeconds
	}
	res := c.updater.Update(ctx, pod, r.InPlace, target, grace)
	if res.Pod != nil {
		c.podVersions.Expect(res.Pod)
	}
	if res.Err != nil {
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedUpdateInPlace, "failed to update pod %s in place: %v", pod.Name, res.Err)
		return res.Pod != nil, fmt.Errorf("updating pod %s in place: %w", pod.Name, res.Err)
	}
	c.metrics.podsUpdated.WithLabelValues(modeInPlace).Inc()
	c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonSuccessfulUpdateInPlace, "successfully update pod %s in-place (revision %s)", pod.Name, update)
	return true, nil
}

// markForRecreate asks for the pod's deletion (label apps.kruise.io/specified-delete, as the
// reference); the next scale pass replaces it within maxUnavailable and maxSurge.
func (c *Controller) markForRecreate(ctx context.Context, p *pass, pod *corev1.Pod) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1beta1.SpecifiedDeleteKey: "true"}}})
	_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedUpdateReCreate, "failed to mark pod %s for recreation: %v", pod.Name, err)
		return fmt.Errorf("marking pod %s for recreation: %w", pod.Name, err)
	}
	c.metrics.podsUpdated.WithLabelValues(modeRecreate).Inc()
	c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonSuccessfulUpdateReCreate, "successfully mark pod %s for recreation (revision %s)", pod.Name, p.history.updateName())
	return nil
}

// refreshPods moves every pod's in-place update on (next batch, InPlaceUpdateReady) and its
// lifecycle state (PreparingNormal to Normal, Updating to Normal or Updated, ...).
func (c *Controller) refreshPods(ctx context.Context, p *pass) (bool, time.Duration, error) {
	logger := klog.FromContext(ctx)
	acted := false
	var after time.Duration
	var errs []string
	for _, pod := range p.pods {
		started := time.Time{}
		if st, err := inplace.ReadState(pod); err == nil && st != nil {
			started = st.UpdateTimestamp.Time
		}
		res := c.updater.Refresh(ctx, pod)
		if res.Pod != nil {
			c.podVersions.Expect(res.Pod)
		}
		if res.Err != nil {
			if !apierrors.IsConflict(res.Err) && !apierrors.IsNotFound(res.Err) {
				errs = append(errs, fmt.Sprintf("pod %s: %v", pod.Name, res.Err))
			}
			acted = true
			continue
		}
		switch res.Outcome {
		case inplace.OutcomeMarkedReady:
			if !started.IsZero() {
				c.metrics.inPlace.Observe(c.clock.Since(started).Seconds())
			}
			acted = true
			continue
		case inplace.OutcomeNextBatch, inplace.OutcomeGraceFinished:
			logger.V(2).Info("In-place update moved on", "pod", klog.KObj(pod), "outcome", res.Outcome, "containers", res.Containers)
			acted = true
			continue
		case inplace.OutcomeWaiting:
			after = shortest(after, res.RequeueAfter)
		}
		want := lifecycle.WantNothing
		if lifecycle.StateOf(pod) == pub.LifecycleStateUpdating {
			if done, _, err := inplace.UpdateDone(pod); err == nil && done && res.Outcome == inplace.OutcomeNothing {
				want = lifecycle.WantUpdateFinished
			}
		}
		dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.cs.Spec.Lifecycle, Want: want,
			AtTargetRevision: Revision(pod) == p.history.updateName()})
		var err error
		if dec.Action == lifecycle.ActionSetState {
			err = c.setLifecycleState(ctx, p, pod, dec)
			acted = true
		} else {
			err = c.patchReadiness(ctx, p, pod, lifecycle.StateOf(pod))
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return acted, after, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return acted, after, nil
}
