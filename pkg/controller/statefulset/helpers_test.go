package statefulset

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// podState is a test pod's condition in one word.
type podState string

const (
	healthy     podState = "healthy"     // Running, Ready for an hour
	notReady    podState = "notReady"    // Running, not Ready
	pending     podState = "pending"     // Pending
	failed      podState = "failed"      // Failed (e.g. evicted)
	terminating podState = "terminating" // being deleted
)

// testPod is pod <set>-<ordinal> in state at revision rev.
func testPod(set string, ordinal int, state podState, rev string) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", set, ordinal)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev, PodIndexLabel: strconv.Itoa(ordinal),
			pub.LifecycleStateKey: string(pub.LifecycleStateNormal)}}}
	switch state {
	case healthy, terminating:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
		if state == terminating {
			ts := metav1.NewTime(t0)
			pod.DeletionTimestamp = &ts
		}
	case notReady:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	case pending:
		pod.Status.Phase = corev1.PodPending
	case failed:
		pod.Status.Phase = corev1.PodFailed
	}
	return pod
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func specifiedDelete(pod *corev1.Pod) *corev1.Pod {
	pod.Labels[appsv1beta1.SpecifiedDeleteKey] = "true"
	return pod
}
