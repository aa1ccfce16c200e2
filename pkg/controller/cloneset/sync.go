package cloneset

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/claimupdate"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// Event reasons (OpenKruise's names where it has them).
const (
	ReasonSuccessfulCreate         = "SuccessfulCreate"
	ReasonFailedCreate             = "FailedCreate"
	ReasonSuccessfulDelete         = "SuccessfulDelete"
	ReasonFailedDelete             = "FailedDelete"
	ReasonScaleUpLimited           = "ScaleUpLimited"
	ReasonSuccessfulUpdateInPlace  = "SuccessfulUpdatePodInPlace"
	ReasonFailedUpdateInPlace      = "FailedUpdatePodInPlace"
	ReasonSuccessfulUpdateReCreate = "SuccessfulUpdatePodReCreate"
	ReasonFailedUpdateReCreate     = "FailedUpdatePodReCreate"
	ReasonInvalidSpec              = "InvalidSpec"
	ReasonPreparingDelete          = "PreparingDelete"
)

// pass is what one reconcile of a CloneSet works from.
type pass struct {
	cs       *appsv1beta1.CloneSet
	key      string
	selector labels.Selector
	budget   Budget
	policy   inplace.UpdatePolicy
	history  *history
	// pods are the CloneSet's active pods; claims its PVCs.
	pods   []*corev1.Pod
	claims []*corev1.PersistentVolumeClaim
	now    time.Time
	// refused says why pods could not be updated (InPlaceOnly), for the FailedUpdate condition.
	refused []string
	// recheck is when to look again for a reason found during the pass (0: none).
	recheck time.Duration
	// noResize is why pods cannot be resized now, "" when they can (Config.Resize).
	noResize string
	// waits are the pods a PodUnavailableBudget held back in this pass. budgetSettled: the pass
	// got as far as disrupting pods (updating or deleting), so no waits means none are left.
	waits         budgetwait.Waits
	budgetSettled bool
	// claimsChecked: expandClaims ran; claimRefusals are the PVCs it could not expand.
	claimsChecked bool
	claimRefusals []claimupdate.Refusal
}

func (c *Controller) sync(ctx context.Context, key string) (after time.Duration, err error) {
	start := c.clock.Now()
	defer func() {
		result := "ok"
		if err != nil {
			result = "error"
		}
		c.metrics.reconcile.WithLabelValues(result).Observe(c.clock.Since(start).Seconds())
	}()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	cs, err := c.cloneSets.CloneSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expect.Forget(key)
		c.stranded.forget(key)
		c.budgetWaits.Forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if cs.DeletionTimestamp != nil {
		c.stranded.forget(key)
		return 0, nil // the garbage collector deletes its pods and PVCs
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cloneSet", klog.KObj(cs)))
	if ok, recheck := c.expect.Satisfied(ctx, key); !ok {
		return recheck, nil
	}
	p, err := c.newPass(ctx, cs, key)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return 0, nil // spec refused; said in an Event
	}

	// Pre-download first, so that pulls start before this pass's updates; its errors are
	// returned after the pass, not in its way.
	preDownloadErr := c.preDownload(ctx, p)
	// Claim expansion is no pod update: it neither waits for the rollout nor holds it.
	claimErr := c.expandClaims(ctx, p)
	var scaleErr, updateErr error
	var actAfter time.Duration
	facts := c.facts(p)
	d := Calculate(p.budget, facts)
	scaleFacts, scaleDiff := facts, d
	if c.preparingUpdateAsUpdate {
		scaleFacts = PreparingUpdateAsUpdated(p.pods, facts)
		scaleDiff = Calculate(p.budget, scaleFacts)
	}
	acted, scaleErr := c.scale(ctx, p, scaleDiff, scaleFacts)
	if !acted && scaleErr == nil {
		acted, actAfter, updateErr = c.update(ctx, p, d, facts)
	}
	if p.waits.Len() > 0 {
		p.recheck = durations.Shortest(p.recheck, budgetwait.RetryAfter)
	}
	if p.waits.Len() > 0 || p.budgetSettled {
		c.budgetWaits.Report(ctx, c.recorder, p.cs, key, p.waits.List())
	}
	statusAfter, statusErr := c.writeStatus(ctx, p, scaleErr, updateErr)
	if scaleErr != nil {
		return 0, scaleErr
	}
	if updateErr != nil {
		return 0, updateErr
	}
	if statusErr != nil {
		return 0, statusErr
	}
	if preDownloadErr != nil {
		return 0, preDownloadErr
	}
	if claimErr != nil {
		return 0, claimErr
	}
	if !acted {
		if err := c.history.TruncateHistory(ctx, p.history.Revisions, p.cs.Spec.RevisionHistoryLimit, p.pods); err != nil {
			return 0, err
		}
		if err := c.prunePodsToDelete(ctx, p); err != nil {
			return 0, err
		}
	}
	return durations.Shortest(actAfter, statusAfter, podstate.AvailableAfter(p.pods, p.cs.Spec.MinReadySeconds, p.now), p.recheck), nil
}

// newPass reads what a reconcile needs; nil (and no error) when the spec cannot be acted on.
func (c *Controller) newPass(ctx context.Context, cs *appsv1beta1.CloneSet, key string) (*pass, error) {
	selector, problem := ownership.PodSelector("CloneSet", cs.Spec.Selector, cs.Spec.Template.Labels)
	if problem != "" {
		c.recorder.Eventf(cs, corev1.EventTypeWarning, ReasonInvalidSpec, "%s", problem)
		return nil, nil
	}
	// What the validating webhook refuses, for a CloneSet admitted without it: pods that end
	// would be replaced without end.
	if rp := cs.Spec.Template.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyAlways {
		c.recorder.Eventf(cs, corev1.EventTypeWarning, ReasonInvalidSpec,
			"spec.template.spec.restartPolicy %s: a CloneSet's pods must run until deleted (Always); no pod is created", rp)
		return nil, nil
	}
	budget, err := Resolve(strategyOf(cs))
	if err != nil {
		c.recorder.Eventf(cs, corev1.EventTypeWarning, ReasonInvalidSpec, "%v", err)
		return nil, nil
	}
	pods, err := c.claimPods(ctx, cs, selector)
	if err != nil {
		return nil, err
	}
	claims, err := c.ownedClaims(cs)
	if err != nil {
		return nil, err
	}
	h, err := c.resolveHistory(ctx, cs, selector)
	if err != nil {
		return nil, err
	}
	// Rolling back needs a revision to go back to.
	budget.Rollback = c.partitionRollback && h.CurrentName() != h.UpdateName()
	var active []*corev1.Pod
	for _, pod := range pods {
		if Active(pod) {
			active = append(active, pod)
		}
	}
	return &pass{cs: cs, key: key, selector: selector, budget: budget, policy: policyOf(cs), history: h,
		pods: active, claims: claims, now: c.clock.Now(), noResize: c.resize.NoResize(ctx)}, nil
}

// facts reads the pass's pods for Calculate.
func (c *Controller) facts(p *pass) []PodFacts {
	toDelete := map[string]bool{}
	for _, n := range p.cs.Spec.ScaleStrategy.PodsToDelete {
		toDelete[n] = true
	}
	o := FactsOptions{
		UpdateRevision: p.history.UpdateName(), MinReadySeconds: p.cs.Spec.MinReadySeconds, Now: p.now,
		PodsToDelete: toDelete,
		Recreate:     func(pod *corev1.Pod) bool { return c.route(p, pod).Recreate },
	}
	if p.budget.Rollback {
		o.RecreateBack = func(pod *corev1.Pod) bool { return c.routeTo(p, pod, p.history.CurrentName()).Recreate }
	}
	return Facts(p.pods, o)
}

// inPlaceOptions are the changes a CloneSet applies in place beyond images and metadata: cpu and
// memory through the pods/resize subresource (Kubernetes 1.33 and later; on older releases they
// are not in place, with the reason: inplace.ResizeSupport), and the images of native sidecars,
// which the kubelet restarts as it does containers.
var inPlaceOptions = inplace.Options{Resize: true, NativeSidecarImages: true}

// route is how pod reaches the update revision under the CloneSet's policy.
func (c *Controller) route(p *pass, pod *corev1.Pod) inplace.Route {
	return c.routeTo(p, pod, p.history.UpdateName())
}

// routeTo is how pod reaches revision target (the current revision for a rollback).
func (c *Controller) routeTo(p *pass, pod *corev1.Pod, target string) inplace.Route {
	return c.claimRoute(p, pod, inplace.RouteUpdate(p.policy, p.history.Template(podstate.Revision(pod)), p.history.Template(target),
		inPlaceOptions.WithoutResize(p.noResize)))
}

// strategyOf reads the CloneSet's strategy in the terms Resolve takes.
func strategyOf(cs *appsv1beta1.CloneSet) Strategy {
	s := Strategy{Replicas: 1, ScaleMaxUnavailable: cs.Spec.ScaleStrategy.MaxUnavailable,
		ExcludePreparingDelete: cs.Spec.ScaleStrategy.ExcludePreparingDelete ||
			cs.Labels[appsv1beta1.CloneSetScalingExcludePreparingDeleteKey] == "true"}
	if cs.Spec.Replicas != nil {
		s.Replicas = *cs.Spec.Replicas
	}
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		s.Partition, s.MaxSurge, s.MaxUnavailable, s.Paused = ru.Partition, ru.MaxSurge, ru.MaxUnavailable, ru.Paused
	}
	return s
}

func policyOf(cs *appsv1beta1.CloneSet) inplace.UpdatePolicy {
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		switch ru.PodUpdatePolicy {
		case appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType:
			return inplace.PolicyInPlaceIfPossible
		case appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType:
			return inplace.PolicyInPlaceOnly
		}
	}
	return inplace.PolicyReCreate
}
