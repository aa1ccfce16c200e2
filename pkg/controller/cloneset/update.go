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
	"k8s.io/client-go/util/workqueue"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

// update moves pods along: first every pod's in-place update and lifecycle state, then, when
// none of them needed a write, old pods to the update revision as d allows, or with d.Rollback
// updated pods back to the current revision. It reports whether it wrote anything and when to
// look again.
func (c *Controller) update(ctx context.Context, p *pass, d Diff, facts []PodFacts) (bool, time.Duration, error) {
	var wait time.Duration
	for _, pod := range p.pods {
		if ok, recheck := c.podVersions.Satisfied(ctx, pod); !ok {
			wait = durations.Shortest(wait, recheck)
		}
	}
	if wait > 0 {
		return false, wait, nil // a pod's last write is not in the cache yet
	}
	// The revision pods are moved to in this pass: a pod waiting in PreparingUpdate is left to
	// wait only while it is not there yet.
	to, want := p.history.UpdateName(), d.Update
	if d.Rollback > 0 {
		to, want = p.history.CurrentName(), d.Rollback
	}
	acted, after, err := c.refreshPods(ctx, p, to)
	if acted || err != nil {
		return acted, after, err
	}
	// From here on the pass decides every update it can make now: none held back by a budget
	// means that no pod waits for one.
	p.budgetSettled = true
	if why := UnconvertedStrategy(p.cs); why != "" && want > 0 {
		p.refused = append(p.refused, why)
		c.recorder.Event(p.cs, corev1.EventTypeWarning, ReasonUnconvertedStrategy, why)
		return false, after, nil
	}
	us := p.cs.Spec.UpdateStrategy
	if us.Type == appsv1beta1.OnDeleteCloneSetUpdateStrategyType || (us.RollingUpdate != nil && us.RollingUpdate.Paused) || want <= 0 {
		return false, after, nil
	}
	var cands []Candidate
	unavailable := 0
	for i, pod := range p.pods {
		f := facts[i]
		if !f.Available {
			unavailable++
		}
		// Old pods for an update, updated ones for a rollback.
		if f.Updated == (d.Rollback == 0) || f.PreparingDelete || f.SpecifiedDelete {
			continue
		}
		// An unreadable pod (reported by refreshPods) waits, not taking a slot of the step.
		if inplace.Unreadable(pod) != nil {
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
	chosen := ChooseUpdates(Diff{Update: want, UpdateMaxUnavailable: d.UpdateMaxUnavailable}, cands, unavailable, order)
	if orderErr != nil {
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonInvalidSpec, "updateStrategy.rollingUpdate.priorityStrategy: %v; pods are updated in the default order", orderErr)
	}
	// The pods of one step are written side by side: each costs a few sequential requests, and
	// the step's last pod should not wait for the first one's.
	outs := make([]podUpdate, len(chosen))
	workqueue.ParallelizeUntil(ctx, updateWorkers, len(chosen), func(i int) {
		outs[i] = c.updatePod(ctx, p, chosen[i], to)
	})
	var errs []string
	for _, o := range outs {
		acted = acted || o.wrote
		if o.refused != "" {
			p.refused = append(p.refused, o.refused)
		}
		if o.err != nil {
			errs = append(errs, o.err.Error())
		}
	}
	if len(errs) > 0 {
		return acted, after, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return acted, after, nil
}

// updateWorkers bounds how many pods of one step are written at once.
const updateWorkers = 16

// podUpdate is what updatePod did to one pod: whether it wrote, why the pod was refused an
// update (for the FailedUpdate condition), and the error.
type podUpdate struct {
	wrote   bool
	refused string
	err     error
}

// updatePod moves one pod towards revision to (the update revision, or the current one for a
// rollback): through its inPlaceUpdate hook, then in place, or by asking for its deletion when it
// must be recreated. It runs beside the other pods of its step, so it only reads p.
func (c *Controller) updatePod(ctx context.Context, p *pass, pod *corev1.Pod, to string) podUpdate {
	r := c.routeTo(p, pod, to)
	if r.Refused != nil {
		return podUpdate{refused: fmt.Sprintf("pod %s: %v", pod.Name, r.Refused)}
	}
	if r.Recreate {
		if w := c.budget.AdmitDeletion(ctx, pod); w != nil {
			p.waits.Add(*w) // reported once for the pass (sync)
			return podUpdate{}
		}
		return podUpdate{wrote: true, err: c.markForRecreate(ctx, p, pod, to)}
	}
	dec := lifecycle.Decide(lifecycle.Input{Pod: pod, Lifecycle: p.cs.Spec.Lifecycle, Want: lifecycle.WantUpdate})
	switch dec.Action {
	case lifecycle.ActionSetState:
		return podUpdate{wrote: true, err: c.setLifecycleState(ctx, p, pod, dec)}
	case lifecycle.ActionUpdate:
	default:
		return podUpdate{}
	}
	target := inplace.Target{
		Revision: to, RevisionLabelKey: appsv1.ControllerRevisionHashLabelKey, RevisionLabelValue: RevisionLabel(p.cs.Name, to, c.shortHash),
		Mutate: func(out *corev1.Pod) {
			lifecycle.SetState(out, pub.LifecycleStateUpdating, c.clock)
			out.Labels[PodTemplateHashLabel] = ShortRevision(p.cs.Name, to)
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
	if res.Outcome == inplace.OutcomeBudgetWait {
		p.waits.Add(*res.Budget) // reported once for the pass (sync)
		return podUpdate{wrote: res.Pod != nil}
	}
	if res.Err != nil {
		c.recorder.Eventf(p.cs, corev1.EventTypeWarning, ReasonFailedUpdateInPlace, "failed to update pod %s in place: %v", pod.Name, res.Err)
		return podUpdate{wrote: res.Pod != nil, err: fmt.Errorf("updating pod %s in place: %w", pod.Name, res.Err)}
	}
	c.metrics.podsUpdated.WithLabelValues(modeInPlace).Inc()
	c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonSuccessfulUpdateInPlace, "successfully update pod %s in-place (revision %s)", pod.Name, to)
	return podUpdate{wrote: true}
}

// markForRecreate asks for the pod's deletion (label apps.kruise.io/specified-delete, as the
// reference); the next scale pass replaces it within maxUnavailable and maxSurge. The budget has
// been asked first (updatePod): a PodUnavailableBudget counts a pod so marked as unavailable, and
// lets its deletion through uncharged.
func (c *Controller) markForRecreate(ctx context.Context, p *pass, pod *corev1.Pod, to string) error {
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
	c.recorder.Eventf(p.cs, corev1.EventTypeNormal, ReasonSuccessfulUpdateReCreate, "successfully mark pod %s for recreation (revision %s)", pod.Name, to)
	return nil
}

// refreshPods moves every pod's in-place update on (next batch, InPlaceUpdateReady) and its
// lifecycle state (PreparingNormal to Normal, Updating to Normal or Updated, ...). to is the
// revision this pass moves pods to: a pod in PreparingUpdate already there needs no update.
//
// A pod whose in-place update annotations do not decode (inplace.Unreadable: anyone who may patch
// pods can write them) is left as it is and reported, not an error of the pass: it is counted as
// it is, never refreshed, and update does not take it. Left, rather than recreated: the
// annotation may record an update half applied, and deleting pods on a value this controller
// cannot read would turn a format it does not know (a newer OpenKruise's, say) into recreating
// every pod. Removing or fixing the annotation lets the rollout take the pod.
func (c *Controller) refreshPods(ctx context.Context, p *pass, to string) (bool, time.Duration, error) {
	return lifecycle.RefreshPass{
		Updater: c.updater, States: c.states(p), UpdateRevision: to,
		Recorder: c.recorder, Owner: p.cs, Refreshed: c.podVersions.Expect,
		Ready: func(took time.Duration) { c.metrics.inPlace.Observe(took.Seconds()) },
	}.Run(ctx, p.pods)
}
