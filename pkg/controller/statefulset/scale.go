package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/expectations"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// scale carries out PlanScale; it reports whether the plan held the pass (wrote, or waits on a
// pod's preDelete hook), in which case the rollout waits for the next pass.
func (c *Controller) scale(ctx context.Context, p *pass) (bool, error) {
	if acted, err := c.keepPreparingDelete(ctx, p); acted || err != nil {
		return acted, err
	}
	maxUnavailable, err := c.scaleMaxUnavailable(p)
	if err != nil {
		return false, err
	}
	plan := PlanScale(ScaleInput{Set: p.set.Name, Wanted: p.wanted, Pods: p.pods, Parallel: parallel(p.set),
		ScaleMaxUnavailable: maxUnavailable, MinReadySeconds: p.minReady, Now: p.now})
	if plan.Waiting != "" {
		klog.FromContext(ctx).V(2).Info("Scaling waits", "reason", plan.Waiting)
	}
	if plan.Limited > 0 {
		c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonScaleUpLimited,
			"scaleStrategy.maxUnavailable holds back %d of the pods to create", plan.Limited)
	}
	if plan.Deferred > 0 {
		// The pod events of these creations bring the next pass (expectations).
		klog.FromContext(ctx).V(2).Info("Creating a burst of pods; the rest follow once the cache shows these",
			"creating", len(plan.Create), "deferred", plan.Deferred, "burst", workers.Burst)
	}
	if plan.Empty() {
		return false, nil
	}
	var errs []string
	for _, pod := range plan.Delete {
		if Finished(pod) {
			c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonRecreatingFailedPod,
				"StatefulSet %s/%s is recreating failed Pod %s", p.set.Namespace, p.set.Name, pod.Name)
			err = c.deletePod(ctx, p, pod)
		} else {
			err = c.deleteWithHook(ctx, p, pod)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(plan.Create) > 0 {
		// Slow start, as the built-in controllers: when creations are refused (quota, an
		// admission policy) a pass makes one call, not a burst of them, before the error backs
		// the queue off.
		outs := make([]error, len(plan.Create))
		revs := c.createRevisions(p, plan.Create)
		workers.SlowStart(len(plan.Create), func(i int) error {
			outs[i] = c.createPod(ctx, p, plan.Create[i], revs[i])
			return outs[i]
		})
		for _, e := range outs {
			if e != nil && !errors.Is(e, errNamespaceGone) {
				errs = append(errs, e.Error())
				p.failedCreate = append(p.failedCreate, e.Error())
			}
		}
	}
	if len(errs) > 0 {
		return true, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return true, nil
}

func (c *Controller) scaleMaxUnavailable(p *pass) (int, error) {
	if !parallel(p.set) || p.set.Spec.ScaleStrategy == nil {
		return 0, nil
	}
	n, err := scaled(p.set.Spec.ScaleStrategy.MaxUnavailable, p.wanted.Len(), 0)
	if err != nil {
		return 0, fmt.Errorf("spec.scaleStrategy.maxUnavailable: %w", err)
	}
	return n, nil
}

// keepPreparingDelete takes back the wanted pods waiting on their preDelete hook that no longer
// need to go: the set scaled up again before the hook let them go, they were not asked to go by
// label, and the rollout does not want to replace them.
func (c *Controller) keepPreparingDelete(ctx context.Context, p *pass) (bool, error) {
	acted := false
	wants := c.rolloutWants(p)
	for _, s := range p.slots {
		pod := s.Pod
		if pod == nil || lifecycle.StateOf(pod) != pub.LifecycleStatePreparingDelete || SpecifiedDelete(pod) || Terminating(pod) {
			continue
		}
		if wants(s.Position, pod) {
			continue
		}
		dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.set.Spec.Lifecycle, Want: lifecycle.WantKeep})
		if dec.Action != lifecycle.ActionSetState {
			continue
		}
		if err := c.setLifecycleState(ctx, p, pod, dec); err != nil {
			return true, err
		}
		acted = true
	}
	return acted, nil
}

// createRevisions are the revisions the pods of ordinals are created at, one for one: by
// default the current one below the partition of a rolling update, else the update revision.
// Under unorderedUpdate, whose partition counts pods (RolloutInput.Unordered), as OpenKruise's: the
// current revision while fewer than partition of the set's pods, the ones created before
// included, are not updated.
func (c *Controller) createRevisions(p *pass, ordinals []int) []string {
	out := make([]string, len(ordinals))
	current, update := p.history.CurrentName(), p.history.UpdateName()
	rolling, part := isRolling(p.set), partition(p.set)
	if !unordered(p.set) {
		for i, o := range ordinals {
			out[i] = update
			if position, _ := p.wanted.Position(o); rolling && position < part {
				out[i] = current
			}
		}
		return out
	}
	notUpdated := 0
	for _, s := range p.slots {
		if s.Pod != nil && !countsAsUpdated(s.Pod, update, c.preparingUpdateAsUpdate) {
			notUpdated++
		}
	}
	for i := range ordinals {
		out[i] = update
		if rolling && notUpdated < part {
			out[i] = current
			notUpdated++
		}
	}
	return out
}

// errNamespaceGone: a creation was refused because the namespace is being deleted; it stops
// the creations but is no failure (see namespaceTerminating).
var errNamespaceGone = errors.New("the namespace is being deleted")

// createPod creates the pod of ordinal, after its missing PVCs.
func (c *Controller) createPod(ctx context.Context, p *pass, ordinal int, rev string) error {
	r := c.recipe(p, rev)
	if err := c.createClaims(ctx, p, r, ordinal, nil); err != nil {
		return err
	}
	pod := NewPod(r, ordinal, p.now)
	c.expect.Expect(p.key, expectations.Create, expectations.Pods, pod.Name)
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		c.expect.Observe(p.key, expectations.Create, expectations.Pods, pod.Name)
		if namespaceTerminating(err) {
			return errNamespaceGone // the set goes with its namespace
		}
		c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonFailedCreate, "create Pod %s in StatefulSet %s failed error: %v", pod.Name, p.set.Name, err)
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	c.recorder.Eventf(p.set, corev1.EventTypeNormal, ReasonSuccessfulCreate, "create Pod %s in StatefulSet %s successful", pod.Name, p.set.Name)
	klog.FromContext(ctx).V(2).Info("Created pod", "pod", klog.KObj(pod), "revision", rev)
	return nil
}

func (c *Controller) recipe(p *pass, rev string) PodRecipe {
	t := p.history.Template(rev)
	if t == nil {
		t = &p.set.Spec.Template
	}
	var match map[string]string
	if p.set.Spec.Selector != nil {
		match = p.set.Spec.Selector.MatchLabels
	}
	return PodRecipe{Owner: *metav1.NewControllerRef(p.set, controllerKind), Namespace: p.set.Namespace, Set: p.set.Name,
		ServiceName: p.set.Spec.ServiceName, Template: t, ClaimTemplates: p.set.Spec.VolumeClaimTemplates,
		MatchLabels: match, Revision: rev, Lifecycle: p.set.Spec.Lifecycle, NoIndexLabel: c.noPodIndexLabel}
}

// deleteWithHook deletes pod, or moves it to PreparingDelete when a preDelete hook holds it.
func (c *Controller) deleteWithHook(ctx context.Context, p *pass, pod *corev1.Pod) error {
	dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.set.Spec.Lifecycle, Want: lifecycle.WantDelete})
	switch dec.Action {
	case lifecycle.ActionDelete:
		return c.deletePod(ctx, p, pod)
	case lifecycle.ActionSetState:
		if err := c.setLifecycleState(ctx, p, pod, dec); err != nil {
			return err
		}
		c.recorder.Eventf(p.set, corev1.EventTypeNormal, ReasonPreparingDelete, "pod %s waits on its preDelete hook: %s", pod.Name, dec.Reason)
	}
	return nil
}

func (c *Controller) deletePod(ctx context.Context, p *pass, pod *corev1.Pod) error {
	err := c.expect.DeletePod(ctx, c.client.CoreV1(), p.key, pod)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if w := budgetwait.Deletion(pod, err); w != nil {
			// The pod webhook kept the pod for a budget: it waits (DeletePod has dropped the
			// expectation), reported once for the pass, not an error to back off from.
			p.waits.Add(*w)
			return nil
		}
		c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonFailedDelete, "delete Pod %s in StatefulSet %s failed error: %v", pod.Name, p.set.Name, err)
		return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
	}
	c.recorder.Eventf(p.set, corev1.EventTypeNormal, ReasonSuccessfulDelete, "delete Pod %s in StatefulSet %s successful", pod.Name, p.set.Name)
	return nil
}

// rolloutWants says whether the rollout would replace a pod (at a position of the wanted
// ordinals): a rolling update, the pod not at the update revision, and at or above the
// partition, or under unorderedUpdate among the pods the partition lets it update.
func (c *Controller) rolloutWants(p *pass) func(position int, pod *corev1.Pod) bool {
	if !isRolling(p.set) {
		return func(int, *corev1.Pod) bool { return false }
	}
	if !unordered(p.set) {
		return func(i int, pod *corev1.Pod) bool {
			return i >= partition(p.set) && podstate.Revision(pod) != p.history.UpdateName()
		}
	}
	in, _, _ := c.rolloutInput(p) // an unreadable maxUnavailable or order changes no choice
	in.Rolling = true
	_, chosen := unorderedChoice(in)
	return func(_ int, pod *corev1.Pod) bool { return slices.Contains(chosen, pod) }
}

// namespaceTerminating is whether err refuses a creation because the namespace is being
// deleted: the set and its pods go with it, so there is nothing to retry or report (as the
// built-in ReplicaSet controller treats it).
func namespaceTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
