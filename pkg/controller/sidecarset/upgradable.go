package sidecarset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The pod condition OpenKruise writes on the pods a SidecarSet's upgrade reaches, kept with the
// same type, reasons and message: its message is a JSON object, SidecarSet name → whether that
// SidecarSet can upgrade the pod in place; it is True when every SidecarSet named can, else False.
const (
	UpgradableCondition corev1.PodConditionType = "SidecarSetUpgradable"
	// ReasonAllUpgradable is the reason of UpgradableCondition=True.
	ReasonAllUpgradable = "AllSidecarsetUpgradable"
	// ReasonNotUpgradable is the reason of UpgradableCondition=False: a SidecarSet changed more
	// than images.
	ReasonNotUpgradable = "UpdateImmutableField"
)

// upgradableVerdicts says, for the pods of views whose condition must say something new about ss,
// whether ss can upgrade them in place, by pod UID: false for the pods the pass found not
// upgradable, true for those it upgraded, and true for a pod recorded false that the SidecarSet
// can reach again (its spec went back; OpenKruise leaves such a pod False).
func upgradableVerdicts(ss *appsv1beta1.SidecarSet, views []podView, ch choice, upgraded map[types.UID]bool) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, pod := range ch.notUpgradable {
		out[pod.UID] = false
	}
	for _, v := range views {
		if upgraded[v.pod.UID] {
			out[v.pod.UID] = true
			continue
		}
		if _, decided := out[v.pod.UID]; decided || !(v.updated || v.upgradable) {
			continue
		}
		if kv, err := upgradableMessage(v.pod); err == nil {
			if ok, recorded := kv[ss.Name]; recorded && !ok {
				out[v.pod.UID] = true
			}
		}
	}
	return out
}

// upgradableMessage reads the pod's UpgradableCondition message; an absent one is empty.
func upgradableMessage(pod *corev1.Pod) (map[string]bool, error) {
	kv := map[string]bool{}
	c, ok := podConditionOf(pod, UpgradableCondition)
	if !ok || c.Message == "" {
		return kv, nil
	}
	if err := json.Unmarshal([]byte(c.Message), &kv); err != nil {
		return nil, fmt.Errorf("condition %s of pod %s/%s: message %q: %w", UpgradableCondition, pod.Namespace, pod.Name, c.Message, err)
	}
	return kv, nil
}

// upgradablePatch is the status patch that records on pod whether SidecarSet name can upgrade it
// in place; nil when the condition says so already. A message that does not parse is started
// afresh (OpenKruise would fail on it at every pass). The patch has no resourceVersion: it only
// merges this one condition by type, as OpenKruise's.
func upgradablePatch(pod *corev1.Pod, name string, ok bool, now time.Time) ([]byte, error) {
	old, had := podConditionOf(pod, UpgradableCondition)
	kv, err := upgradableMessage(pod)
	if err != nil {
		kv = map[string]bool{}
	}
	kv[name] = ok
	cond := corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionTrue, Reason: ReasonAllUpgradable}
	for _, v := range kv {
		if !v {
			cond.Status, cond.Reason = corev1.ConditionFalse, ReasonNotUpgradable
		}
	}
	msg, err := json.Marshal(kv)
	if err != nil {
		return nil, fmt.Errorf("encoding condition %s of pod %s/%s: %w", UpgradableCondition, pod.Namespace, pod.Name, err)
	}
	cond.Message = string(msg)
	if had && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return nil, nil
	}
	cond.LastTransitionTime = metav1.NewTime(now)
	if had && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	data, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return nil, fmt.Errorf("encoding the status patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return data, nil
}

// recordUpgradable writes the verdicts on the pods of views; it returns the errors of the writes
// that failed (a pod gone is not one).
func (c *Controller) recordUpgradable(ctx context.Context, ss *appsv1beta1.SidecarSet, views []podView, verdicts map[types.UID]bool) error {
	var errs []error
	for _, v := range views {
		ok, due := verdicts[v.pod.UID]
		if !due {
			continue
		}
		pod := v.pod
		data, err := upgradablePatch(pod, ss.Name, ok, c.clock.Now())
		if err != nil || data == nil {
			errs = append(errs, err)
			continue
		}
		_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("setting condition %s of pod %s/%s: %w", UpgradableCondition, pod.Namespace, pod.Name, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Recorded whether the SidecarSet can upgrade the pod in place", "pod", klog.KObj(pod), "upgradable", ok)
	}
	return errors.Join(errs...)
}

func podConditionOf(pod *corev1.Pod, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}
