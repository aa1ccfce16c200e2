package statefulset

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// inPlaceOptions are the changes applied in place beyond images and metadata: cpu and memory
// through pods/resize (Kubernetes 1.33+: inplace.ResizeSupport), and native sidecars' images (as
// the CloneSet controller does).
var inPlaceOptions = inplace.Options{Resize: true, NativeSidecarImages: true}

func isRolling(set *appsv1beta1.StatefulSet) bool {
	return set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType
}

// partition is rollingUpdate.partition, 0 when unset.
func partition(set *appsv1beta1.StatefulSet) int {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return int(*ru.Partition)
	}
	return 0
}

func policyOf(set *appsv1beta1.StatefulSet) inplace.UpdatePolicy {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		switch ru.PodUpdatePolicy {
		case appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType:
			return inplace.PolicyInPlaceIfPossible
		case appsv1beta1.InPlaceOnlyPodUpdateStrategyType:
			return inplace.PolicyInPlaceOnly
		}
	}
	return inplace.PolicyReCreate
}

// unordered is whether rollingUpdate.unorderedUpdate applies (Parallel only): partition then
// counts pods instead of keeping the lowest positions (RolloutInput.Unordered).
func unordered(set *appsv1beta1.StatefulSet) bool {
	ru := set.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.UnorderedUpdate != nil && parallel(set)
}

// rolloutInput is what PlanRollout decides from in this pass. badOrder is why the
// priorityStrategy could not be read (the pods then go from the highest ordinal).
func (c *Controller) rolloutInput(p *pass) (in RolloutInput, badOrder, err error) {
	ru := p.set.Spec.UpdateStrategy.RollingUpdate
	in = RolloutInput{Slots: p.slots, Missing: p.missing, Rolling: isRolling(p.set) && (ru == nil || !ru.Paused), Partition: partition(p.set),
		MaxUnavailable: 1, Parallel: parallel(p.set), UpdateRevision: p.history.UpdateName(), MinReadySeconds: p.minReady, Now: p.now,
		Unordered: unordered(p.set), PreparingUpdateAsUpdate: c.preparingUpdateAsUpdate,
		Held: func(pod *corev1.Pod) bool { return inplace.Unreadable(pod) != nil || p.claimState.held[pod.Name] }}
	if ru == nil || !in.Parallel {
		return in, nil, nil
	}
	// The order first: rolloutWants reads the choice even when maxUnavailable does not parse.
	if ru.UnorderedUpdate != nil && ru.UnorderedUpdate.PriorityStrategy != nil {
		if prio, err := podorder.NewPriority(ru.UnorderedUpdate.PriorityStrategy); err != nil {
			badOrder = err
		} else {
			in.Order = prio.Sort
		}
	}
	n, err := scaled(ru.MaxUnavailable, p.wanted.Len(), 1)
	if err != nil {
		return in, badOrder, fmt.Errorf("spec.updateStrategy.rollingUpdate.maxUnavailable: %w", err)
	}
	in.MaxUnavailable = n
	return in, badOrder, nil
}

// rollout carries out PlanRollout: deletes pods asked to go by label, and updates old pods in
// place or by deleting them (their ordinals are then created at the update revision).
func (c *Controller) rollout(ctx context.Context, p *pass) (bool, error) {
	in, badOrder, err := c.rolloutInput(p)
	if err != nil {
		return false, err
	}
	if badOrder != nil {
		c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonInvalidSpec,
			"updateStrategy.rollingUpdate.unorderedUpdate.priorityStrategy: %v; pods are updated from the highest ordinal", badOrder)
	}
	plan := PlanRollout(in)
	if plan.Waiting != "" {
		klog.FromContext(ctx).V(2).Info("Rollout waits", "reason", plan.Waiting)
	}
	var errs []string
	for _, pod := range plan.Delete {
		if err := c.deleteWithHook(ctx, p, pod); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, pod := range plan.Update {
		if err := c.updatePod(ctx, p, pod); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return true, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return len(plan.Delete)+len(plan.Update) > 0, nil
}

// updatePod moves one old pod to the update revision: in place when the policy and the change
// allow it, else by deleting it (through its preDelete hook).
func (c *Controller) updatePod(ctx context.Context, p *pass, pod *corev1.Pod) error {
	update := p.history.UpdateName()
	if lifecycle.StateOf(pod) == pub.LifecycleStatePreparingDelete {
		return c.deleteWithHook(ctx, p, pod) // on its way out already
	}
	policy := policyOf(p.set)
	if policy != inplace.PolicyReCreate && !inplace.DeclaresReadinessGate(pod) {
		c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonInPlaceGateMissing,
			"pod %s lacks the %s readiness gate that an in-place update needs (add it to spec.template.spec.readinessGates); it is recreated instead",
			pod.Name, pub.InPlaceUpdateReady)
		policy = inplace.PolicyReCreate
	}
	r := inplace.RouteUpdate(policy, p.history.Template(podstate.Revision(pod)), p.history.Template(update), inPlaceOptions.WithoutResize(p.noResize))
	if r.Refused != nil {
		msg := fmt.Sprintf("pod %s: %v", pod.Name, r.Refused)
		p.failedUpdate = append(p.failedUpdate, msg)
		c.recorder.Event(p.set, corev1.EventTypeWarning, ReasonFailedUpdateInPlace, msg)
		return nil
	}
	if r.Recreate {
		waiting := p.waits.Len()
		if err := c.deleteWithHook(ctx, p, pod); err != nil || p.waits.Len() > waiting {
			return err // failed, or kept for a budget
		}
		c.recorder.Eventf(p.set, corev1.EventTypeNormal, ReasonSuccessfulUpdate, "pod %s is recreated at revision %s", pod.Name, update)
		return nil
	}
	dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.set.Spec.Lifecycle, Want: lifecycle.WantUpdate})
	switch dec.Action {
	case lifecycle.ActionSetState:
		return c.setLifecycleState(ctx, p, pod, dec)
	case lifecycle.ActionUpdate:
	default:
		return nil
	}
	target := inplace.Target{Revision: update, RevisionLabelKey: appsv1.ControllerRevisionHashLabelKey, RevisionLabelValue: update,
		Mutate: lifecycle.StateSetter(pub.LifecycleStateUpdating, c.clock)}
	var grace int32
	if ru := p.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		grace = ru.InPlaceUpdateStrategy.GracePeriodSeconds
	}
	res := c.updater.Update(ctx, pod, r.InPlace, target, grace)
	if res.Pod != nil {
		c.podVersions.Expect(res.Pod)
	}
	if res.Outcome == inplace.OutcomeBudgetWait {
		p.waits.Add(*res.Budget) // reported once for the pass (sync)
		return nil
	}
	if res.Err != nil {
		c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonFailedUpdateInPlace, "failed to update pod %s in place: %v", pod.Name, res.Err)
		return fmt.Errorf("updating pod %s in place: %w", pod.Name, res.Err)
	}
	c.recorder.Eventf(p.set, corev1.EventTypeNormal, ReasonSuccessfulUpdateInPlace, "successfully update pod %s in-place (revision %s)", pod.Name, update)
	return nil
}

// refreshPods moves every pod's in-place update on (next batch, InPlaceUpdateReady) and its
// lifecycle state (PreparingNormal to Normal, Updating to Normal or Updated, ...).
//
// A pod whose in-place update annotations do not decode is left as it is and reported, not an
// error of the pass; the rollout leaves it too (RolloutInput.Held), for the reasons the CloneSet
// controller gives (pkg/controller/cloneset refreshPods).
func (c *Controller) refreshPods(ctx context.Context, p *pass) (bool, time.Duration, error) {
	var pods []*corev1.Pod
	for _, pod := range p.pods {
		if !Terminating(pod) {
			pods = append(pods, pod)
		}
	}
	return lifecycle.RefreshPass{
		Updater: c.updater, States: c.states(p), UpdateRevision: p.history.UpdateName(),
		Recorder: c.recorder, Owner: p.set, Refreshed: c.podVersions.Expect,
	}.Run(ctx, pods)
}

// states writes the lifecycle states of p's pods, expecting each write so that the pod's next
// update waits until the cache shows it (a pod just sent to PreparingDelete is no longer
// available).
func (c *Controller) states(p *pass) lifecycle.Writer {
	return lifecycle.Writer{Client: c.client, Clock: c.clock, Lifecycle: p.set.Spec.Lifecycle, Wrote: c.podVersions.Expect}
}

// setLifecycleState writes decision d's state on pod (lifecycle.Writer.SetState).
func (c *Controller) setLifecycleState(ctx context.Context, p *pass, pod *corev1.Pod, d lifecycle.Decision) error {
	_, err := c.states(p).SetState(ctx, pod, d)
	return err
}
