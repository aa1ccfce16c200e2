package statefulset

import (
	"context"
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
	"github.com/nodekruise/kruise/pkg/podstate"
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

// rollout carries out PlanRollout: deletes pods asked to go by label, and updates old pods in
// place or by deleting them (their ordinals are then created at the update revision).
func (c *Controller) rollout(ctx context.Context, p *pass) (bool, error) {
	ru := p.set.Spec.UpdateStrategy.RollingUpdate
	in := RolloutInput{Slots: p.slots, Missing: p.missing, Rolling: isRolling(p.set) && (ru == nil || !ru.Paused), Partition: partition(p.set),
		MaxUnavailable: 1, Parallel: parallel(p.set), UpdateRevision: p.history.updateName(), MinReadySeconds: p.minReady, Now: p.now,
		Held: func(pod *corev1.Pod) bool { return inplace.Unreadable(pod) != nil }}
	if ru != nil && in.Parallel {
		n, err := scaled(ru.MaxUnavailable, p.wanted.Len(), 1)
		if err != nil {
			return false, fmt.Errorf("spec.updateStrategy.rollingUpdate.maxUnavailable: %w", err)
		}
		in.MaxUnavailable = n
		if ru.UnorderedUpdate != nil && ru.UnorderedUpdate.PriorityStrategy != nil {
			prio, err := podorder.NewPriority(ru.UnorderedUpdate.PriorityStrategy)
			if err != nil {
				c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonInvalidSpec,
					"updateStrategy.rollingUpdate.unorderedUpdate.priorityStrategy: %v; pods are updated from the highest ordinal", err)
			} else {
				in.Order = prio.Sort
			}
		}
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
	update := p.history.updateName()
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
	r := inplace.RouteUpdate(policy, p.history.template(podstate.Revision(pod)), p.history.template(update), inPlaceOptions.WithoutResize(p.noResize))
	if r.Refused != nil {
		msg := fmt.Sprintf("pod %s: %v", pod.Name, r.Refused)
		p.failedUpdate = append(p.failedUpdate, msg)
		c.recorder.Event(p.set, corev1.EventTypeWarning, ReasonFailedUpdateInPlace, msg)
		return nil
	}
	if r.Recreate {
		if err := c.deleteWithHook(ctx, p, pod); err != nil {
			return err
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
	acted := false
	var after time.Duration
	var errs []string
	for _, pod := range p.pods {
		if Terminating(pod) {
			continue
		}
		res := c.updater.Refresh(ctx, pod)
		if res.Pod != nil {
			c.podVersions.Expect(res.Pod)
		}
		if res.Outcome == inplace.OutcomeUnreadable {
			inplace.ReportUnreadable(ctx, c.recorder, p.set, pod, res.Err)
			continue
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
			acted = true
			pod = res.Pod
		case inplace.OutcomeNextBatch, inplace.OutcomeGraceFinished, inplace.OutcomeGateReleased, inplace.OutcomeGateHeld, inplace.OutcomeNotReadyRestated:
			acted = true
			continue
		case inplace.OutcomeWaiting:
			after = shortest(after, res.RequeueAfter)
		}
		want := lifecycle.WantNothing
		if lifecycle.StateOf(pod) == pub.LifecycleStateUpdating {
			if done, _, err := inplace.UpdateDone(pod); err == nil && done &&
				(res.Outcome == inplace.OutcomeNothing || res.Outcome == inplace.OutcomeMarkedReady) {
				want = lifecycle.WantUpdateFinished
			}
		}
		dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.set.Spec.Lifecycle, Want: want,
			AtTargetRevision: podstate.Revision(pod) == p.history.updateName()})
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

// setLifecycleState writes decision d's state on pod: the KruisePodReady condition first, then
// the state label.
func (c *Controller) setLifecycleState(ctx context.Context, p *pass, pod *corev1.Pod, d lifecycle.Decision) error {
	if err := c.patchReadiness(ctx, p, pod, d.State); err != nil {
		return err
	}
	patch, err := d.Patch(pod, c.clock)
	if err != nil || patch == nil {
		return err
	}
	out, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting lifecycle state %s on pod %s: %w", d.State, pod.Name, err)
	}
	// Until the cache shows the new state, the pod must not be read as it was (a pod just sent
	// to PreparingDelete is no longer available).
	c.podVersions.Expect(out)
	klog.FromContext(ctx).V(2).Info("Set lifecycle state", "pod", klog.KObj(pod), "state", d.State, "reason", d.Reason)
	return nil
}

// patchReadiness gives the pod the KruisePodReady condition its lifecycle state asks for.
func (c *Controller) patchReadiness(ctx context.Context, p *pass, pod *corev1.Pod, state pub.LifecycleStateType) error {
	patch, err := lifecycle.ReadinessPatch(pod, p.set.Spec.Lifecycle, state, c.clock)
	if err != nil || patch == nil {
		return err
	}
	out, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the KruisePodReady condition of pod %s: %w", pod.Name, err)
	}
	c.podVersions.Expect(out)
	return nil
}
