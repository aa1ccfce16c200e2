package launchpriority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
)

// sync releases what is due of the pod named by key.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil // not a key this controller queued; nothing to retry
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !live(pod) {
		return 0, nil
	}
	p, ok, err := planOf(pod)
	if !ok {
		return 0, nil
	}
	if err != nil {
		c.report(pod, ReasonInvalidBarrier, "", fmt.Sprintf("kruise cannot release this pod's containers: %v. "+
			"%s is kruise's; it was set while kruise's pod webhook was not called", err, lp.EnvBarrier))
		return 0, nil // the containers cannot change: nothing to retry
	}
	completed := pod.Annotations[lp.AnnotationCompleted] == lp.KeyValue
	if completed && !configError(pod, p) {
		return 0, nil
	}
	n := len(p.levels) // a completed pod had every key: restore them all
	if !completed {
		n = p.due(pod)
	}
	cm, err := c.ensureBarrier(ctx, pod, p, p.keys(n))
	if errors.Is(err, errPreviousPodsBarrier) {
		klog.FromContext(ctx).V(2).Info("Waiting for the garbage collector to delete the barrier ConfigMap of a deleted pod of the same name",
			"pod", klog.KObj(pod), "configMap", p.configMap)
		return previousBarrierRecheck, nil
	}
	if err != nil || cm == nil {
		return 0, err
	}
	if completed {
		return 0, nil
	}
	done := hasAll(cm, p.keys(len(p.levels)))
	if err := c.annotate(ctx, pod, p, cm, done); err != nil {
		return 0, err
	}
	if done {
		return 0, nil
	}
	return c.waiting(pod, p, n), nil
}

// ensureBarrier makes the barrier ConfigMap hold at least the keys want,
// and returns it as written. nil without an error: the ConfigMap is someone
// else's (reported).
func (c *Controller) ensureBarrier(ctx context.Context, pod *corev1.Pod, p plan, want []string) (*corev1.ConfigMap, error) {
	logger := klog.FromContext(ctx)
	cms := c.client.CoreV1().ConfigMaps(pod.Namespace)
	cur, err := cms.Get(ctx, p.configMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: p.configMap, Namespace: pod.Namespace, OwnerReferences: []metav1.OwnerReference{ownerRef(pod)}},
			Data:       keyData(nil, want),
		}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			// AlreadyExists included: the next try reads it.
			return nil, fmt.Errorf("creating barrier ConfigMap %s/%s: %w", pod.Namespace, p.configMap, err)
		}
		logger.V(2).Info("Created the barrier ConfigMap", "pod", klog.KObj(pod), "configMap", p.configMap, "keys", want, "plan", p.describe())
		return created, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading barrier ConfigMap %s/%s: %w", pod.Namespace, p.configMap, err)
	}
	if cur.DeletionTimestamp != nil {
		return nil, fmt.Errorf("barrier ConfigMap %s/%s is being deleted; it is created again once it is gone", pod.Namespace, p.configMap)
	}

	upd := cur.DeepCopy()
	switch ownership(cur, pod) {
	case ours:
		if hasAll(cur, want) {
			return cur, nil
		}
		upd.Data = keyData(upd.Data, want)
	case previous:
		// A pod of the same name, now gone, left it for the garbage collector, which deletes
		// it within moments; it is created for this pod then. Taking it over would change its
		// owner references, which under the OwnerReferencesPermissionEnforcement admission
		// plugin needs the right to delete ConfigMaps, everywhere: kruise does not hold it.
		return nil, errPreviousPodsBarrier
	default:
		c.report(pod, ReasonBarrierConflict, p.configMap, fmt.Sprintf("ConfigMap %s, which the containers' %s env vars read, is not this pod's (owners: %s): "+
			"kruise does not write it, so its keys, not the launch priorities, decide when those containers start", p.configMap, lp.EnvBarrier, owners(cur)))
		return nil, nil
	}
	written, err := cms.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		// A conflict (changed meanwhile) is retried with what it is now.
		return nil, fmt.Errorf("adding keys %v to barrier ConfigMap %s/%s: %w", want, pod.Namespace, p.configMap, err)
	}
	logger.V(2).Info("Released launch priorities", "pod", klog.KObj(pod), "configMap", p.configMap, "keys", want, "plan", p.describe())
	return written, nil
}

// annotate records on the pod the lowest released priority that containers
// wait for (AnnotationReleased: the change makes the kubelet start them now)
// and, once every key is in, AnnotationCompleted. Only what differs from the
// pod is written; the pod's UID is part of the patch, so a pod of the same
// name created meanwhile is not touched.
func (c *Controller) annotate(ctx context.Context, pod *corev1.Pod, p plan, cm *corev1.ConfigMap, done bool) error {
	want := map[string]string{}
	if k := p.released(cm); k != "" && pod.Annotations[lp.AnnotationReleased] != k {
		want[lp.AnnotationReleased] = k
	}
	if done {
		want[lp.AnnotationCompleted] = lp.KeyValue
	}
	if len(want) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID, "annotations": want}})
	if err != nil {
		return fmt.Errorf("encoding the launch-priority annotations: %w", err)
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("annotating pod %s/%s with its launch progress: %w", pod.Namespace, pod.Name, err)
	}
	logger := klog.FromContext(ctx)
	if done {
		logger.V(2).Info("Every launch priority released", "pod", klog.KObj(pod), "plan", p.describe())
	} else {
		logger.V(4).Info("Told the kubelet of released priorities", "pod", klog.KObj(pod), "released", want[lp.AnnotationReleased])
	}
	return nil
}

// waiting warns about the containers the next level waits for once they
// are late, and says when to look at the pod again: when they become late,
// or after Recheck (a ConfigMap deleted meanwhile is recreated).
func (c *Controller) waiting(pod *corev1.Pod, p plan, n int) time.Duration {
	if pod.Status.StartTime == nil {
		return c.recheck
	}
	late := pod.Status.StartTime.Add(c.slowAfter).Sub(c.clock.Now())
	if late > 0 {
		return min(late, c.recheck)
	}
	for _, name := range p.blocking(pod, n) {
		c.report(pod, ReasonBlocked, name, fmt.Sprintf("container %s (priority %d) is not Ready %v after the pod started; "+
			"the containers of lower priority (%s) wait for it and do not start until it is",
			name, p.priorityOf(name), c.slowAfter, p.below(n)))
	}
	return c.recheck
}

// errPreviousPodsBarrier: the barrier ConfigMap belongs to a deleted pod of the same name and
// waits for the garbage collector.
var errPreviousPodsBarrier = errors.New("the barrier ConfigMap belongs to a deleted pod of the same name")

// previousBarrierRecheck is how soon a pod whose barrier waits for the garbage collector looks
// again: ConfigMaps are not watched, and the collector acts within about a second.
const previousBarrierRecheck = time.Second

// owner is how a barrier ConfigMap relates to the pod whose containers read
// it.
type owner int

const (
	foreign  owner = iota
	ours           // an owner reference to this pod (OpenKruise's carry no controller flag)
	previous       // owned only by a pod of the same name, which must be gone
)

func ownership(cm *corev1.ConfigMap, pod *corev1.Pod) owner {
	if len(cm.OwnerReferences) == 0 {
		return foreign
	}
	if slices.ContainsFunc(cm.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == pod.UID }) {
		return ours
	}
	for _, r := range cm.OwnerReferences {
		if r.APIVersion != "v1" || r.Kind != "Pod" || r.Name != pod.Name {
			return foreign
		}
	}
	return previous
}

// ownerRef makes the pod the ConfigMap's controller, so the garbage
// collector deletes it with the pod. blockOwnerDeletion is not set: it would
// need the right to update pods/finalizers, and nothing waits on it.
func ownerRef(pod *corev1.Pod) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}
}

func owners(cm *corev1.ConfigMap) string {
	if len(cm.OwnerReferences) == 0 {
		return "none"
	}
	out := ""
	for i, r := range cm.OwnerReferences {
		if i > 0 {
			out += ", "
		}
		out += r.Kind + " " + r.Name
	}
	return out
}

// keyData is data with every key of keys set.
func keyData(data map[string]string, keys []string) map[string]string {
	if data == nil {
		data = map[string]string{}
	}
	for _, k := range keys {
		data[k] = lp.KeyValue
	}
	return data
}

// hasAll reports whether the ConfigMap has every key of keys.
func hasAll(cm *corev1.ConfigMap, keys []string) bool {
	for _, k := range keys {
		if _, ok := cm.Data[k]; !ok {
			return false
		}
	}
	return true
}
