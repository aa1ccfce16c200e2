package inplace

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

const (
	// ReasonStartInPlaceUpdate is the reason of InPlaceUpdateReady=False while an update runs.
	ReasonStartInPlaceUpdate = "StartInPlaceUpdate"
	// ReasonOldContainerReady is the reason of InPlaceUpdateReady=False set again after a release
	// (HoldStatusPatch): the kubelet reported the pod Ready on a container the update replaces.
	ReasonOldContainerReady = "OldContainerReady"
	// reasonGateNotReady is the reason given with Ready=False, the one the kubelet gives for a
	// readiness gate that is not True, which it writes itself at its next status sync.
	reasonGateNotReady = "ReadinessGatesNotReady"
)

// DeclaresReadinessGate reports whether the pod lists InPlaceUpdateReady in its readiness gates:
// only then is it taken out of its Services while it is updated.
func DeclaresReadinessGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == pub.InPlaceUpdateReady {
			return true
		}
	}
	return false
}

// InjectReadinessGate adds the InPlaceUpdateReady readiness gate to a template unless it has it,
// and reports whether it added it.
func InjectReadinessGate(t *corev1.PodTemplateSpec) bool {
	for _, g := range t.Spec.ReadinessGates {
		if g.ConditionType == pub.InPlaceUpdateReady {
			return false
		}
	}
	t.Spec.ReadinessGates = append(t.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady})
	return true
}

// Condition returns the pod's InPlaceUpdateReady condition, or nil.
func Condition(pod *corev1.Pod) *corev1.PodCondition {
	return podCondition(pod, pub.InPlaceUpdateReady)
}

// NotReadyStatusPatch is the status patch that starts an update on a pod with the readiness
// gate: InPlaceUpdateReady=False, and Ready=False at once rather than at the kubelet's next sync,
// so that endpoints drop the pod before its containers change. It carries the pod's
// resourceVersion: a pod changed since it was read fails with a conflict.
//
// Ready's message decides whether the patch costs the kubelet a sync of the pod: it runs one when
// the message differs from the one it would write itself. Each sync first waits for the runtime's
// next relist (about a second), and a spec update written meanwhile waits behind it. So when the
// spec update follows at once (specFollows), the message is the kubelet's own and the only sync is
// the update's, which computes Ready=False itself. When the update waits out a grace period, the
// message is kruise's: the kubelet syncs and records Ready=False in its own status cache, which
// its periodic status reconcile would otherwise write back as the Ready=True it last computed.
func NotReadyStatusPatch(pod *corev1.Pod, now time.Time, specFollows bool) ([]byte, error) {
	return notReadyPatch(pod, conditionAt(pod, pub.InPlaceUpdateReady, corev1.ConditionFalse, ReasonStartInPlaceUpdate, "", now), now, specFollows)
}

// HoldStatusPatch sets InPlaceUpdateReady=False again, with reason OldContainerReady, and
// Ready=False with kruise's message (so that the kubelet syncs and records it), on a pod whose
// gate was released and that the kubelet reported Ready on a container its update replaces. A
// held gate is not released again for the same update.
func HoldStatusPatch(pod *corev1.Pod, now time.Time) ([]byte, error) {
	gate := conditionAt(pod, pub.InPlaceUpdateReady, corev1.ConditionFalse, ReasonOldContainerReady,
		"the kubelet reported the pod Ready on a container this update replaces; held until the update is done", now)
	return notReadyPatch(pod, gate, now, false)
}

// RestateNotReadyStatusPatch sets Ready=False again, with kruise's message, on a pod whose gate
// is False but that the kubelet wrote back Ready on a container its update replaces: the message
// makes the kubelet sync the pod and record Ready=False in its own status cache, so that it does
// not write Ready=True back again. The gate is written as it is.
func RestateNotReadyStatusPatch(pod *corev1.Pod, now time.Time) ([]byte, error) {
	gate := Condition(pod)
	if gate == nil {
		return nil, fmt.Errorf("pod %s/%s has no %s condition", pod.Namespace, pod.Name, pub.InPlaceUpdateReady)
	}
	return notReadyPatch(pod, *gate, now, false)
}

// notReadyPatch writes gate, and Ready=False unless the pod already has it (see
// NotReadyStatusPatch for the message).
func notReadyPatch(pod *corev1.Pod, gate corev1.PodCondition, now time.Time, specFollows bool) ([]byte, error) {
	conds := []corev1.PodCondition{gate}
	if ready := podCondition(pod, corev1.PodReady); ready == nil || ready.Status != corev1.ConditionFalse {
		message := fmt.Sprintf("readiness gate %s is False", pub.InPlaceUpdateReady)
		if specFollows {
			message = kubeletGatesMessage(pod, gate)
		}
		conds = append(conds, conditionAt(pod, corev1.PodReady, corev1.ConditionFalse, reasonGateNotReady, message, now))
	}
	return statusPatch(pod, conds)
}

// kubeletGatesMessage is the message the kubelet gives Ready=False for readiness gates that are
// not True (pkg/kubelet/status GeneratePodReadyCondition), with changed in place of the pod's own
// condition of its type.
func kubeletGatesMessage(pod *corev1.Pod, changed corev1.PodCondition) string {
	var parts []string
	for _, g := range pod.Spec.ReadinessGates {
		c := podCondition(pod, g.ConditionType)
		if g.ConditionType == changed.Type {
			c = &changed
		}
		switch {
		case c == nil:
			parts = append(parts, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case c.Status != corev1.ConditionTrue:
			parts = append(parts, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
		}
	}
	return strings.Join(parts, ", ")
}

// ReadyStatusPatch sets InPlaceUpdateReady=True, carrying the pod's resourceVersion: it holds
// only for the pod as read, whose completion was checked.
func ReadyStatusPatch(pod *corev1.Pod, now time.Time) ([]byte, error) {
	return statusPatch(pod, []corev1.PodCondition{conditionAt(pod, pub.InPlaceUpdateReady, corev1.ConditionTrue, "", "", now)})
}

// ReleaseStatusPatch sets InPlaceUpdateReady=True before the update is done, with reason
// ContainersRestarting (see kubeletRestarting), carrying the pod's resourceVersion: it holds only
// for the pod as read.
func ReleaseStatusPatch(pod *corev1.Pod, now time.Time) ([]byte, error) {
	message := fmt.Sprintf("the kubelet is replacing the updated containers (pod generation %d); Ready follows their readiness", pod.Generation)
	return statusPatch(pod, []corev1.PodCondition{conditionAt(pod, pub.InPlaceUpdateReady, corev1.ConditionTrue, pub.InPlaceUpdateRestartingReason, message, now)})
}

// held reports whether the pod's InPlaceUpdateReady was taken back by HoldStatusPatch.
func held(pod *corev1.Pod) bool {
	c := Condition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonOldContainerReady
}

// released reports whether the pod's InPlaceUpdateReady is True by ReleaseStatusPatch, before
// its update was done.
func released(pod *corev1.Pod) bool {
	c := Condition(pod)
	return c != nil && c.Status == corev1.ConditionTrue && c.Reason == pub.InPlaceUpdateRestartingReason
}

// conditionAt builds a condition of the pod, keeping its lastTransitionTime when the status
// does not change.
func conditionAt(pod *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)}
	if old := podCondition(pod, t); old != nil && old.Status == s {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return c
}

// statusPatch is a strategic merge patch of status conditions (merged by type, so no other
// condition is touched) that carries the pod's resourceVersion. An empty reason or message where
// the condition has one is written as null, which removes it: a merge would keep it.
func statusPatch(pod *corev1.Pod, conds []corev1.PodCondition) ([]byte, error) {
	entries := make([]map[string]any, 0, len(conds))
	for _, c := range conds {
		var entry map[string]any
		raw, err := json.Marshal(c)
		if err == nil {
			err = json.Unmarshal(raw, &entry)
		}
		if err != nil {
			return nil, fmt.Errorf("encoding condition %s of pod %s/%s: %w", c.Type, pod.Namespace, pod.Name, err)
		}
		if had := podCondition(pod, c.Type); had != nil {
			if c.Reason == "" && had.Reason != "" {
				entry["reason"] = nil
			}
			if c.Message == "" && had.Message != "" {
				entry["message"] = nil
			}
		}
		entries = append(entries, entry)
	}
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": entries},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the status patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return data, nil
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func conditionIs(pod *corev1.Pod, s corev1.ConditionStatus) bool {
	c := Condition(pod)
	return c != nil && c.Status == s
}
