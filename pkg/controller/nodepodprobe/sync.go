package nodepodprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// sync marks the pod named by key: reads its markers and results from the caches, decides, and
// writes what changed.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil // not a key this controller queued; nothing to retry
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	markers, err := c.markers.PodProbeMarkers(ns).List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing the PodProbeMarkers of %s: %w", ns, err)
	}
	plan := Decide(pod, markers, c.resultsOf(pod))
	if plan.Empty() {
		return 0, nil
	}
	enc, err := json.Marshal(plan)
	if err != nil {
		return 0, fmt.Errorf("encoding the plan of pod %s: %w", key, err)
	}
	if c.sent(key, pod, string(enc)) {
		return 0, nil // written already; the cache is behind
	}
	if err := c.write(ctx, pod, plan); err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.written[key] = writtenPlan{uid: pod.UID, resourceVersion: pod.ResourceVersion, plan: string(enc)}
	c.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Marked pod", "pod", klog.KObj(pod), "plan", string(enc))
	return 0, nil
}

// sent reports whether plan was written for this very version of the pod.
func (c *Controller) sent(key string, pod *corev1.Pod, plan string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.written[key]
	return ok && w.uid == pod.UID && w.resourceVersion == pod.ResourceVersion && w.plan == plan
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.written, key)
	c.mu.Unlock()
}

// resultsOf finds the pod's results: its entry (same uid) in its node's NodePodProbe status, or,
// on a serverless node with the gate on, its own conditions.
func (c *Controller) resultsOf(pod *corev1.Pod) Results {
	node := pod.Spec.NodeName
	if node == "" {
		return Results{}
	}
	if c.serverless {
		if n, err := c.nodes.Get(node); err == nil && n.Labels[appsv1alpha1.VirtualKubeletLabel] == appsv1alpha1.VirtualKubeletValue {
			return Results{Serverless: true}
		}
	}
	npp, err := c.npps.Get(node)
	if err != nil {
		return Results{}
	}
	for i := range npp.Status.PodProbeStatuses {
		e := &npp.Status.PodProbeStatuses[i]
		if e.UID == string(pod.UID) && e.Namespace == pod.Namespace && e.Name == pod.Name {
			return Results{Entry: e}
		}
	}
	return Results{}
}

// write sends the plan: conditions first (pods/status, strategic merge), then labels, annotations
// and the record (merge patch). In that order a write cut in half leaves nothing unaccounted
// for: a condition set without its record carries Reason, which is enough to take it off later.
// Both bodies carry the pod's uid, so neither lands on a pod recreated under the same name.
func (c *Controller) write(ctx context.Context, pod *corev1.Pod, plan Plan) error {
	pods := c.client.CoreV1().Pods(pod.Namespace)
	if plan.Status() {
		body, err := statusPatch(pod.UID, plan)
		if err != nil {
			return err
		}
		if _, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("patching the conditions of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if plan.Metadata() {
		body, err := metadataPatch(pod.UID, plan)
		if err != nil {
			return err
		}
		if _, err := pods.Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("patching the marks of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return nil
}

// metadataPatch is the JSON merge patch of the plan's labels and annotations (null removes a
// key). A pod without labels or annotations takes it as well (OpenKruise issue #2499).
func metadataPatch(uid types.UID, plan Plan) ([]byte, error) {
	meta := map[string]any{"uid": uid}
	if len(plan.Labels) > 0 {
		meta["labels"] = plan.Labels
	}
	if len(plan.Annotations) > 0 {
		meta["annotations"] = plan.Annotations
	}
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("encoding the marks patch: %w", err)
	}
	return body, nil
}

// statusPatch is the strategic merge patch of the plan's conditions: conditions merge by type, so
// each set one replaces its namesake field by field (message and reason are always sent, so an
// empty message clears the old one) and "$patch": "delete" removes one. No resourceVersion is
// needed: other conditions, which the kubelet writes, are left as they are.
func statusPatch(uid types.UID, plan Plan) ([]byte, error) {
	conds := make([]map[string]any, 0, len(plan.Conditions)+len(plan.RemoveConditions))
	for _, c := range plan.Conditions {
		conds = append(conds, map[string]any{
			"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message,
			"lastProbeTime": timeOrNull(c.LastProbeTime), "lastTransitionTime": timeOrNull(c.LastTransitionTime),
		})
	}
	for _, t := range plan.RemoveConditions {
		conds = append(conds, map[string]any{"type": t, "$patch": "delete"})
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": map[string]any{"conditions": conds}})
	if err != nil {
		return nil, fmt.Errorf("encoding the conditions patch: %w", err)
	}
	return body, nil
}

func timeOrNull(t metav1.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
