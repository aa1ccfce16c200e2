package statefulset

import (
	"context"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/ordinals"
	"github.com/nodekruise/kruise/pkg/workload/ownership"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// Event reasons: the built-in StatefulSet controller's, and OpenKruise's for in-place updates.
const (
	ReasonSuccessfulCreate        = "SuccessfulCreate"
	ReasonFailedCreate            = "FailedCreate"
	ReasonSuccessfulDelete        = "SuccessfulDelete"
	ReasonFailedDelete            = "FailedDelete"
	ReasonRecreatingFailedPod     = "RecreatingFailedPod"
	ReasonSuccessfulUpdateInPlace = "SuccessfulUpdatePodInPlace"
	ReasonFailedUpdateInPlace     = "FailedUpdatePodInPlace"
	ReasonSuccessfulUpdate        = "SuccessfulUpdate"
	ReasonInvalidSpec             = "InvalidSpec"
	ReasonPreparingDelete         = "PreparingDelete"
	ReasonScaleUpLimited          = "ScaleUpLimited"
	// ReasonInPlaceGateMissing: an in-place policy, but the pod lacks the InPlaceUpdateReady
	// readiness gate; it is recreated instead.
	ReasonInPlaceGateMissing = "InPlaceUpdateReadyGateMissing"
)

// pass is what one reconcile of a StatefulSet works from.
type pass struct {
	set      *appsv1beta1.StatefulSet
	key      string
	selector labels.Selector
	history  *history
	// pods are all the set's pods. wanted are the ordinals the set runs (never listed out:
	// replicas may be huge); slots those of them that have a pod, ascending, and missing how
	// many have none.
	pods      []*corev1.Pod
	wanted    ordinals.Wanted
	slots     []Slot
	missing   int
	retention Retention
	minReady  int32
	now       time.Time
	// failedCreate and failedUpdate are this pass's failures, for the status conditions;
	// scaled and rolled say whether the pass got to scaling and to the rollout, so that a
	// condition is cleared only by a pass that would have found its failure again.
	failedCreate, failedUpdate []string
	scaled, rolled             bool
	// noResize is why pods cannot be resized now, "" when they can (Config.Resize).
	noResize string
	// waits are the pods a PodUnavailableBudget held back in this pass (a pass that rolled and
	// found none ends the wait).
	waits budgetwait.Waits
	// claimState is what updateClaims found (volumeclaims.go).
	claimState volumeClaims
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	set, err := c.sets.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expect.Forget(key)
		c.budgetWaits.Forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if set.DeletionTimestamp != nil {
		return 0, nil // the garbage collector deletes its pods (and PVCs it owns)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("statefulSet", klog.KObj(set)))
	if ok, recheck := c.expect.Satisfied(ctx, key); !ok {
		return recheck, nil
	}
	p, err := c.newPass(ctx, set, key)
	if namespaceTerminating(err) {
		return 0, nil // no revision can be written: the set goes with its namespace
	}
	if err != nil || p == nil {
		return 0, err
	}
	// Pre-download goes first so that nothing the pass waits for holds it back, and a failure
	// of its own holds nothing back: it is returned at the end.
	preDownloadErr := c.preDownload(ctx, p)
	after, actErr := c.act(ctx, p)
	if p.waits.Len() > 0 {
		after = durations.Shortest(after, budgetwait.RetryAfter)
	}
	if p.waits.Len() > 0 || p.rolled {
		c.budgetWaits.Report(ctx, c.recorder, p.set, key, p.waits.List())
	}
	statusErr := c.writeStatus(ctx, p)
	if actErr != nil {
		return 0, actErr
	}
	if statusErr != nil {
		return 0, statusErr
	}
	if preDownloadErr != nil {
		return 0, preDownloadErr
	}
	return durations.Shortest(after, podstate.AvailableAfter(p.pods, p.minReady, p.now)), nil
}

// act takes the pass's one step: move pods' in-place updates and lifecycle states on, keep the
// PVCs and their owners right, then scale, then update. Scaling and updating never happen in the
// same pass: each waits for the cache to show the other's writes.
func (c *Controller) act(ctx context.Context, p *pass) (time.Duration, error) {
	for _, pod := range p.pods {
		if ok, recheck := c.podVersions.Satisfied(ctx, pod); !ok {
			return recheck, nil // a pod's last write is not in the cache yet
		}
	}
	acted, after, err := c.refreshPods(ctx, p)
	if err != nil {
		p.failedUpdate = append(p.failedUpdate, err.Error())
	}
	if acted || err != nil {
		return after, err
	}
	if err := c.syncClaims(ctx, p); err != nil {
		return after, err
	}
	if err := c.updateClaims(ctx, p); err != nil {
		return after, err
	}
	p.scaled = true
	if acted, err := c.scale(ctx, p); acted || err != nil {
		return after, err
	}
	p.rolled = true
	if _, err := c.rollout(ctx, p); err != nil {
		p.failedUpdate = append(p.failedUpdate, err.Error())
		return after, err
	}
	if err := c.history.TruncateHistory(ctx, p.history.Revisions, p.set.Spec.RevisionHistoryLimit, p.pods); err != nil {
		return after, err
	}
	return after, nil
}

// newPass reads what a reconcile needs; nil (and no error) when the spec cannot be acted on.
func (c *Controller) newPass(ctx context.Context, set *appsv1beta1.StatefulSet, key string) (*pass, error) {
	selector, problem := ownership.PodSelector("StatefulSet", set.Spec.Selector, set.Spec.Template.Labels)
	if problem != "" {
		c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonInvalidSpec, "%s", problem)
		return nil, nil
	}
	reserved, err := ordinals.Parse(set.Spec.ReserveOrdinals)
	if err != nil {
		c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonInvalidSpec, "spec.%v; no pod is created", err)
		return nil, nil
	}
	pods, err := c.claimPods(ctx, set, selector)
	if err != nil {
		return nil, err
	}
	h, err := c.resolveHistory(ctx, set, selector)
	if err != nil {
		return nil, err
	}
	p := &pass{set: set, key: key, selector: selector, history: h, pods: pods, now: c.clock.Now(), noResize: c.resize.NoResize(ctx)}
	if !c.ignoreClaimRetention {
		p.retention = RetentionOf(set)
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MinReadySeconds != nil {
		p.minReady = *ru.MinReadySeconds
	}
	start := StartOrdinal(set)
	if c.ignoreOrdinalsStart {
		start = 0
	}
	p.wanted = ordinals.NewWanted(start, Replicas(set), reserved)
	for _, pod := range pods {
		o, ok := OrdinalOf(set.Name, pod.Name)
		if !ok {
			continue
		}
		if pos, ok := p.wanted.Position(o); ok {
			p.slots = append(p.slots, Slot{Ordinal: o, Position: pos, Pod: pod})
		}
	}
	sort.Slice(p.slots, func(i, j int) bool { return p.slots[i].Ordinal < p.slots[j].Ordinal })
	p.missing = p.wanted.Len() - len(p.slots)
	return p, nil
}

// parallel is podManagementPolicy Parallel.
func parallel(set *appsv1beta1.StatefulSet) bool {
	return set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
}

// scaled resolves an IntOrString bound against replicas (a percentage rounds up, as
// maxUnavailable does upstream), at least 1 when set; def when unset.
func scaled(v *intstr.IntOrString, replicas, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, true)
	if err != nil {
		return 0, err
	}
	return max(n, 1), nil
}
