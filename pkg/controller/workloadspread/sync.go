package workloadspread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

// moreWritesAfter is when a reconcile that left pod writes undone looks again.
const moreWritesAfter = time.Second

// Event reasons on a WorkloadSpread.
const (
	ReasonTargetNotFound    = "TargetNotFound"
	ReasonUnsupportedTarget = "UnsupportedTarget"
	ReasonCreatePodFailed   = "CreatePodFailed"
	ReasonDeletePodFailed   = "DeletePodFailed"
	ReasonRescheduled       = "RescheduleUnschedulablePod"
	ReasonRecovered         = "RecoverSchedulable"
)

// sync adopts the pods created before the WorkloadSpread, recomputes its status from its
// workload's pods, writes the deletion costs that differ, then the status when it changed, and
// deletes the pods the Adaptive strategy moves on, at most maxWrites pod writes in all. It asks
// to look again only when something pending expires, or when pod writes are left.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	ws, err := c.spreads.WorkloadSpreads(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if ws.DeletionTimestamp != nil || ws.Spec.TargetReference == nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("workloadSpread", klog.KObj(ws))
	ctx = klog.NewContext(ctx, logger)
	tgt, err := c.readTarget(ctx, ws)
	if errors.Is(err, errUnsupported) {
		// Its replicas cannot be read, but its pods can be counted (the pods it controls, as
		// OpenKruise counts a workload without replicas): count maxReplicas hold, percentages
		// count 0 replicas. The status is still written, so its observedGeneration moves.
		c.recorder.Eventf(ws, corev1.EventTypeWarning, ReasonUnsupportedTarget, "Target %s %s: %v; its pods are counted, percentages of its replicas count 0", ws.Spec.TargetReference.Kind, ws.Spec.TargetReference.Name, err)
		tgt, err = target{workload: &spread.Workload{Ref: *ws.Spec.TargetReference, Selector: labels.Everything()}}, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the target of %s: %w", key, err)
	}
	var pods []*corev1.Pod
	var replicas int32
	if tgt.workload == nil {
		c.recorder.Eventf(ws, corev1.EventTypeWarning, ReasonTargetNotFound, "Target %s %s does not exist", ws.Spec.TargetReference.Kind, ws.Spec.TargetReference.Name)
	} else {
		replicas = tgt.workload.Replicas
		if pods, err = c.podsOf(ws, tgt.workload); err != nil {
			return 0, err
		}
	}
	budget := c.maxWrites
	adopted, adoptLeft, err := c.adopt(ctx, ws, pods, replicas, &budget)
	if err != nil {
		return 0, err
	}
	groups := spread.Group(ws, pods, adopted)
	now := c.clock.Now()
	res, err := spread.ComputeStatus(ws, groups, replicas, now)
	if err != nil {
		// A malformed maxReplicas (admission refuses it): nothing to do until the spec changes.
		logger.Error(err, "Cannot compute the status")
		return 0, nil
	}
	after := res.Requeue
	if adoptLeft {
		after = sooner(after, moreWritesAfter)
	}
	// Costs first: a status with the new observedGeneration tells readers (the reference's tests,
	// rollout tools) that the spec's effects are in place, the pods' costs included.
	if spread.CostsApply(*ws.Spec.TargetReference) {
		patches, err := spread.DeletionCosts(ws, groups, replicas, tgt.latest, now)
		if err != nil {
			return 0, err
		}
		left, err := c.writeCosts(ctx, patches, &budget)
		if err != nil {
			return 0, err
		}
		if left {
			after = sooner(after, moreWritesAfter)
		}
	}
	if !equality.Semantic.DeepEqual(ws.Status, res.Status) {
		next := ws.DeepCopy()
		next.Status = res.Status
		if _, err := c.kruiseClient.AppsV1alpha1().WorkloadSpreads(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			// A conflict (the webhook charged meanwhile) is retried by the loop with a fresh read.
			return 0, fmt.Errorf("writing the status of %s: %w", key, err)
		}
		logger.V(2).Info("Updated status", "subsets", spread.String(res.Status.SubsetStatuses))
		c.statusEvents(ws, res)
	}
	left, err := c.reschedule(ctx, ws, res.Reschedule, &budget)
	if err != nil {
		return 0, err
	}
	if left {
		after = sooner(after, moreWritesAfter)
	}
	return after, nil
}

// podsOf are the pods of ws's namespace that the target controls (through a Deployment's
// ReplicaSets too) and its selector matches (with targetFilter's).
func (c *Controller) podsOf(ws *appsv1alpha1.WorkloadSpread, w *spread.Workload) ([]*corev1.Pod, error) {
	sel := w.Selector
	if sel == nil {
		sel = labels.Everything()
	}
	all, err := c.pods.Pods(ws.Namespace).List(sel)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var out []*corev1.Pod
	for _, p := range all {
		if ref := spread.OwnerRef(p, c.rsOwner); ref != nil && spread.RefersTo(ws, *ref) {
			out = append(out, p)
		}
	}
	return out, nil
}

// statusEvents records what the written status dropped or recovered.
func (c *Controller) statusEvents(ws *appsv1alpha1.WorkloadSpread, res spread.StatusResult) {
	for _, m := range res.Expired {
		if m.Deleting {
			c.recorder.Eventf(ws, corev1.EventTypeWarning, ReasonDeletePodFailed, "Pod %s/%s of subset %s was expected to be deleted but it wasn't", ws.Namespace, m.Pod, m.Subset)
			continue
		}
		c.recorder.Eventf(ws, corev1.EventTypeWarning, ReasonCreatePodFailed, "Pod %s/%s of subset %s was expected to be created but it wasn't", ws.Namespace, m.Pod, m.Subset)
	}
	for _, s := range res.Recovered {
		c.recorder.Eventf(ws, corev1.EventTypeNormal, ReasonRecovered, "Subset %s is schedulable again", s)
	}
}

// adopt annotates the pods of the workload that no subset admitted (created before the
// WorkloadSpread) with the subset they fit, reading each whole from the API server (the cache
// keeps too little of a pod to match terms, tolerations and patches). It returns the subsets
// given, by pod UID, for this reconcile's counts; left says the budget ran out first.
func (c *Controller) adopt(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod, replicas int32, budget *int) (
	adopted map[types.UID]string, left bool, err error) {
	if c.nodes == nil {
		return nil, false, nil
	}
	var candidates []*corev1.Pod
	for _, p := range pods {
		if !spread.NeedsAdoption(ws, p) || c.unfit.has(ws, p) {
			continue
		}
		if *budget <= 0 {
			left = true
			break
		}
		*budget--
		full, err := c.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if full.UID == p.UID && spread.NeedsAdoption(ws, full) {
			candidates = append(candidates, full)
		}
	}
	if len(candidates) == 0 {
		return nil, left, nil
	}
	room, err := spread.Room(ws, pods, replicas)
	if err != nil {
		// A malformed maxReplicas: ComputeStatus reports it; nothing is adopted meanwhile.
		return nil, false, nil
	}
	node := func(name string) *corev1.Node {
		n, err := c.nodes.Get(name)
		if err != nil {
			return nil
		}
		return n
	}
	adoptions, err := spread.Adopt(ws, candidates, node, room)
	if err != nil {
		return nil, false, err
	}
	adopted = map[types.UID]string{}
	placed := map[types.UID]bool{}
	for _, a := range adoptions {
		placed[a.Pod.UID] = true
	}
	for _, p := range candidates {
		if !placed[p.UID] {
			// Fits no subset: not read again until it or the WorkloadSpread changes.
			c.unfit.add(ws, p)
		}
	}
	for _, a := range adoptions {
		_, err := c.client.CoreV1().Pods(a.Pod.Namespace).Patch(ctx, a.Pod.Name, types.MergePatchType, a.Patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("adopting pod %s/%s into subset %s: %w", a.Pod.Namespace, a.Pod.Name, a.Subset, err)
		}
		klog.FromContext(ctx).V(2).Info("Adopted pod", "pod", klog.KObj(a.Pod), "subset", a.Subset)
		adopted[a.Pod.UID] = a.Subset
	}
	return adopted, left, nil
}

// writeCosts patches the deletion costs that differ, as many as the budget allows; left says
// some remain.
func (c *Controller) writeCosts(ctx context.Context, patches []spread.CostPatch, budget *int) (left bool, err error) {
	for _, p := range patches {
		if *budget <= 0 {
			return true, nil
		}
		*budget--
		// The UID makes the patch fail on a new pod of the same name.
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.Pod.UID,
			"annotations": map[string]string{appsv1alpha1.PodDeletionCostAnnotation: p.Cost}}})
		if err != nil {
			return false, err
		}
		_, err = c.client.CoreV1().Pods(p.Pod.Namespace).Patch(ctx, p.Pod.Name, types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("writing the deletion cost of pod %s/%s: %w", p.Pod.Namespace, p.Pod.Name, err)
		}
	}
	return false, nil
}

// reschedule deletes the pods the Adaptive strategy moves on (their workload recreates them, and
// the webhook skips their subset while it is Schedulable=False); left says the budget ran out.
func (c *Controller) reschedule(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod, budget *int) (left bool, err error) {
	for _, p := range pods {
		if *budget <= 0 {
			return true, nil
		}
		*budget--
		uid := p.UID
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			c.recorder.Eventf(ws, corev1.EventTypeWarning, ReasonDeletePodFailed, "Failed to delete unschedulable pod %s/%s: %v", p.Namespace, p.Name, err)
			return false, fmt.Errorf("deleting unschedulable pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		c.recorder.Eventf(ws, corev1.EventTypeNormal, ReasonRescheduled,
			"Pod %s/%s of subset %s could not be scheduled for %ds; deleted so that it is recreated in another subset",
			p.Namespace, p.Name, spread.SubsetOf(ws, p), *ws.Spec.ScheduleStrategy.Adaptive.RescheduleCriticalSeconds)
	}
	return false, nil
}

// unfitPods remembers the pods adoption found fitting no subset, with the pod's resourceVersion
// and the WorkloadSpread's generation then, so that they are not read from the API server at
// every reconcile.
type unfitPods struct {
	mu sync.Mutex
	m  map[types.UID]unfitMark
}

type unfitMark struct {
	spread     types.UID
	generation int64
	version    string
}

func (u *unfitPods) has(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[pod.UID] == unfitMark{ws.UID, ws.Generation, pod.ResourceVersion}
}

func (u *unfitPods) add(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[types.UID]unfitMark{}
	}
	u.m[pod.UID] = unfitMark{ws.UID, ws.Generation, pod.ResourceVersion}
}

func (u *unfitPods) forget(uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, uid)
}

// sooner is the earlier of two requeue delays, 0 meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || a > b {
		return b
	}
	return a
}
