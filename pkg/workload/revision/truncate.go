package revision

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// Live returns what Truncate must keep: the current and update revisions'
// names and the revision each of pods was made from (its
// controller-revision-hash label, a name or a short hash). Pass the
// workload's pods that still exist.
func (r *Revisions) Live(pods []*corev1.Pod) sets.Set[string] {
	live := sets.New[string]()
	for _, rev := range []*appsv1.ControllerRevision{r.Current, r.Update} {
		if rev != nil {
			live.Insert(rev.Name)
		}
	}
	for _, pod := range pods {
		if value := pod.Labels[PodRevisionLabel]; value != "" {
			live.Insert(value)
		}
	}
	return live
}

// Truncate deletes the oldest of revisions until at most limit of them are
// not live, and never deletes a live one: one whose name or short hash is
// in live (see Revisions.Live). A revision already gone is not an error.
func (h *History) Truncate(ctx context.Context, revisions []*appsv1.ControllerRevision, limit int32, live sets.Set[string]) error {
	var old []*appsv1.ControllerRevision
	for _, rev := range revisions {
		if !live.Has(rev.Name) && !live.Has(ShortHash(rev.Name)) {
			old = append(old, rev)
		}
	}
	old = slices.Clone(old)
	Sort(old)
	excess := len(old) - max(int(limit), 0)
	logger := klog.FromContext(ctx)
	for _, rev := range old[:max(excess, 0)] {
		err := h.writer.Delete(ctx, rev.Namespace, rev.Name, rev.UID)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old revision %s: %w", klog.KObj(rev), err)
		}
		logger.V(2).Info("Deleted old revision", "revision", klog.KObj(rev), "number", rev.Revision)
	}
	return nil
}

// DefaultHistoryLimit is OpenKruise's default of a workload's spec.revisionHistoryLimit.
const DefaultHistoryLimit int32 = 10

// HistoryLimit is the number of old revisions spec.revisionHistoryLimit keeps: limit, or
// DefaultHistoryLimit when it is unset.
func HistoryLimit(limit *int32) int32 {
	if limit == nil {
		return DefaultHistoryLimit
	}
	return *limit
}

// TruncateHistory is Truncate as a workload whose pods carry their revision in the
// controller-revision-hash label runs it: it keeps r's current and update revisions and those of
// pods (Revisions.Live), and at most limit (spec.revisionHistoryLimit, see HistoryLimit) others.
func (h *History) TruncateHistory(ctx context.Context, r *Revisions, limit *int32, pods []*corev1.Pod) error {
	if err := h.Truncate(ctx, r.All, HistoryLimit(limit), r.Live(pods)); err != nil {
		return fmt.Errorf("truncating the revision history: %w", err)
	}
	return nil
}
