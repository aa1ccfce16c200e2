package daemonset

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// inPlaceOptions: what a DaemonSet applies in place beyond images and metadata: cpu and memory
// through the pods/resize subresource, as CloneSet and Advanced StatefulSet do (OpenKruise's
// Advanced DaemonSet does so under gate InPlaceWorkloadVerticalScaling too). Where pods cannot
// be resized (old API server, gate off) a cpu or memory change recreates the pod, with the
// reason (Options.WithoutResize).
var inPlaceOptions = inplace.Options{Resize: true}

// podsSettled reports whether the cache shows the controller's last in-place write to every pod:
// an update started again from a stale copy would record the new container as the old one.
func (c *Controller) podsSettled(ctx context.Context, p *pass) bool {
	for _, n := range p.nodes {
		for _, pod := range n.Pods {
			if ok, recheck := c.podVersions.Satisfied(ctx, pod); !ok {
				p.after(recheck)
				return false
			}
		}
	}
	return true
}

// update takes a step of the rolling update, for RollingUpdate when not paused, on the nodes
// partition and the update selector allow. It reports whether it wrote anything.
func (c *Controller) update(ctx context.Context, p *pass) (bool, error) {
	// From here on the pass decides every update it can make now: none held back by a budget
	// means that no pod waits for one.
	p.budgetSettled = true
	us := p.ds.Spec.UpdateStrategy
	if us.Type == appsv1beta1.OnDeleteDaemonSetStrategyType || (us.RollingUpdate != nil && us.RollingUpdate.Paused != nil && *us.RollingUpdate.Paused) {
		return false, nil
	}
	var selector labels.Selector
	if us.RollingUpdate != nil && us.RollingUpdate.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(us.RollingUpdate.Selector)
		if err != nil {
			c.recorder.Eventf(p.ds, corev1.EventTypeWarning, ReasonInvalidSpec, "updateStrategy.rollingUpdate.selector: %v", err)
			return false, nil
		}
		selector = s
	}
	hash := p.history.updateHash()
	held := func(pod *corev1.Pod) bool { return inplace.Unreadable(pod) != nil }
	plan := PlanRolling(p.nodes, RollingOptions{
		UpdateRevision: hash, MaxUnavailable: p.budget.MaxUnavailable, MaxSurge: p.budget.MaxSurge,
		MinReadySeconds: p.ds.Spec.MinReadySeconds, Now: p.now,
		Updatable: UpdatableNodes(p.nodes, hash, p.budget.Partition, selector, held), Held: held,
	})
	p.after(plan.Recheck)
	acted := false
	var errs []error
	for _, pod := range plan.Replace {
		wrote, err := c.replacePod(ctx, p, pod)
		acted = acted || wrote
		errs = append(errs, err)
	}
	if len(plan.Surge) > 0 {
		acted = true
		errs = append(errs, c.createPods(ctx, p, plan.Surge))
	}
	return acted, errors.Join(errs...)
}

// replacePod brings an old pod to the update revision: in place when the rolling update type is
// InPlaceIfPossible and only what can change in place changed, else by deleting it (through its
// preDelete hook) so that manage creates its replacement.
func (c *Controller) replacePod(ctx context.Context, p *pass, pod *corev1.Pod) (bool, error) {
	hash := p.history.updateHash()
	if inPlaceType(p.ds) {
		if old, cur := p.history.template(podstate.Revision(pod)), p.history.template(hash); old != nil && cur != nil {
			spec, err := inplace.Plan(old, cur, inPlaceOptions.WithoutResize(p.noResize))
			if err == nil && inplace.DeclaresReadinessGate(pod) {
				return c.updateInPlace(ctx, p, pod, spec)
			}
		}
	}
	return c.removePod(ctx, p, pod)
}

func (c *Controller) updateInPlace(ctx context.Context, p *pass, pod *corev1.Pod, spec *inplace.Spec) (bool, error) {
	hash := p.history.updateHash()
	target := inplace.Target{Revision: hash, RevisionLabelKey: appsv1.ControllerRevisionHashLabelKey, RevisionLabelValue: hash}
	res := c.updater.Update(ctx, pod, spec, target, 0)
	if res.Pod != nil {
		c.podVersions.Expect(res.Pod)
		p.written(res.Pod)
	}
	if res.Outcome == inplace.OutcomeBudgetWait {
		p.waits.Add(*res.Budget) // reported once for the pass (sync)
		return res.Pod != nil, nil
	}
	if res.Err != nil {
		c.recorder.Eventf(p.ds, corev1.EventTypeWarning, ReasonFailedUpdateInPlace, "failed to update pod %s in place: %v", pod.Name, res.Err)
		return res.Pod != nil, fmt.Errorf("updating pod %s in place: %w", pod.Name, res.Err)
	}
	c.recorder.Eventf(p.ds, corev1.EventTypeNormal, ReasonSuccessfulUpdateInPlace, "successfully update pod %s in-place (revision %s)", pod.Name, hash)
	return true, nil
}

// refreshInPlace moves every pod's in-place update on: the next container batch once the last
// is done, and InPlaceUpdateReady=True once all are (which is also how a new pod carrying the
// gate becomes ready at all, so it runs whatever manage did in the same pass).
//
// A pod whose in-place update annotations do not decode is left as it is and reported, not an
// error of the pass; the update leaves it too (RollingOptions.Held), for the reasons the
// CloneSet controller gives (pkg/controller/cloneset refreshPods).
func (c *Controller) refreshInPlace(ctx context.Context, p *pass) (bool, error) {
	acted := false
	var errs []error
	for _, n := range p.nodes {
		for _, pod := range n.Pods {
			if Terminating(pod) {
				continue
			}
			res := c.updater.Refresh(ctx, pod)
			if res.Pod != nil {
				c.podVersions.Expect(res.Pod)
				p.written(res.Pod)
			}
			switch {
			case res.Outcome == inplace.OutcomeUnreadable:
				inplace.ReportUnreadable(ctx, c.recorder, p.ds, pod, res.Err)
			case res.Err != nil:
				acted = true
				if !apierrors.IsConflict(res.Err) && !apierrors.IsNotFound(res.Err) {
					errs = append(errs, fmt.Errorf("pod %s: %w", pod.Name, res.Err))
				}
			case res.Outcome == inplace.OutcomeWaiting:
				p.after(res.RequeueAfter)
			case res.Outcome != inplace.OutcomeNothing:
				acted = true
			}
		}
	}
	return acted, errors.Join(errs...)
}
