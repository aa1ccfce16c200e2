package podunavailablebudget

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

// morePatchesAfter is when a reconcile that left pods to annotate looks again.
const morePatchesAfter = time.Second

// sync computes the budget's status from the pods it covers and writes it when it changed, then
// annotates covered pods lacking kruise.io/related-pub. It asks to look again when a recorded
// charge expires. A budget that covers no pod still gets its status (OpenKruise #1857).
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	b, err := c.budgets.PodUnavailableBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if b.DeletionTimestamp != nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("podUnavailableBudget", klog.KObj(b))
	all, err := c.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	var covered []*corev1.Pod
	for _, p := range all {
		ok, err := podbudget.Covers(ctx, c.workloads, b, p)
		if err != nil {
			return 0, err
		}
		if ok {
			covered = append(covered, p)
		}
	}
	obs, err := podbudget.Observe(ctx, c.workloads, c.workloads, b, covered)
	if err != nil {
		return 0, fmt.Errorf("counting the replicas of %s: %w", key, err)
	}
	obs.Now = c.clock.Now()
	res, err := podbudget.ComputeStatus(b, obs)
	if err != nil {
		return 0, fmt.Errorf("computing the status of %s: %w", key, err)
	}
	if !equality.Semantic.DeepEqual(b.Status, res.Status) {
		next := b.DeepCopy()
		next.Status = res.Status
		if _, err := c.kruiseClient.PolicyV1alpha1().PodUnavailableBudgets(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			// A conflict (an Admit charged meanwhile) is retried by the loop with a fresh read.
			return 0, fmt.Errorf("writing the status of %s: %w", key, err)
		}
		logger.V(2).Info("Updated status", "unavailableAllowed", res.Status.UnavailableAllowed, "currentAvailable", res.Status.CurrentAvailable,
			"desiredAvailable", res.Status.DesiredAvailable, "totalReplicas", res.Status.TotalReplicas)
		// Only once the charges are released for good.
		for _, pod := range res.NotDeleted {
			c.recorder.Eventf(b, corev1.EventTypeWarning, podbudget.ReasonNotDeleted,
				"Pod %s was allowed to be deleted, evicted or resized more than %s ago and is still there; its charge is released", pod, podbudget.DeletionTimeout)
		}
	}
	after := res.RecheckAfter
	left, err := c.annotate(ctx, b, covered)
	if err != nil {
		return 0, err
	}
	if left && (after == 0 || after > morePatchesAfter) {
		after = morePatchesAfter
	}
	return after, nil
}

// annotate patches kruise.io/related-pub onto covered pods that lack it, at most maxPatches;
// left says whether some remain.
func (c *Controller) annotate(ctx context.Context, b *policyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod) (left bool, err error) {
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Annotations[policyv1alpha1.PodRelatedPubAnnotation] != "" {
			continue
		}
		if n == c.maxPatches {
			return true, nil
		}
		n++
		// The UID makes the patch fail on a new pod of the same name, rather than annotate it.
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.UID,
			"annotations": map[string]string{policyv1alpha1.PodRelatedPubAnnotation: b.Name}}})
		if err != nil {
			return false, err
		}
		_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("annotating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return false, nil
}
