package podstate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func readyPod(name string, since time.Time, mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{
		gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}),
	}
	return gen.Pod(name, append(base, mods...)...)
}

func state(s pub.LifecycleStateType) gen.PodModifier {
	return gen.AddPodLabels(map[string]string{pub.LifecycleStateKey: string(s)})
}

func TestAvailable(t *testing.T) {
	inPlace := func(s corev1.ConditionStatus) gen.PodModifier {
		return gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: s})
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		minReady  int32
		ready     bool
		available bool
	}{
		{name: "ready and normal", pod: readyPod("p", t0, state(pub.LifecycleStateNormal)), ready: true, available: true},
		{name: "no lifecycle label", pod: readyPod("p", t0), ready: true, available: true},
		{name: "pending", pod: gen.Pod("p", gen.SetPodPhase(corev1.PodPending)), ready: false},
		{name: "in-place update under way", pod: readyPod("p", t0, inPlace(corev1.ConditionFalse)), ready: false},
		{name: "in-place update done", pod: readyPod("p", t0, inPlace(corev1.ConditionTrue)), ready: true, available: true},
		{name: "waiting on preNormal", pod: readyPod("p", t0, state(pub.LifecycleStatePreparingNormal)), ready: true, available: false},
		{name: "waiting on preDelete", pod: readyPod("p", t0, state(pub.LifecycleStatePreparingDelete)), ready: true, available: false},
		{name: "not ready long enough", pod: readyPod("p", t0.Add(-9*time.Second)), minReady: 10, ready: true, available: false},
		{name: "ready long enough", pod: readyPod("p", t0.Add(-10*time.Second)), minReady: 10, ready: true, available: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ready(tc.pod); got != tc.ready {
				t.Errorf("Ready = %v, want %v", got, tc.ready)
			}
			if got := Available(tc.pod, tc.minReady, t0); got != tc.available {
				t.Errorf("Available = %v, want %v", got, tc.available)
			}
		})
	}
}

func TestAvailableAfter(t *testing.T) {
	now := t0.Add(time.Minute)
	pods := []*corev1.Pod{
		readyPod("available", t0),
		readyPod("soon", now.Add(-20*time.Second)),
		readyPod("later", now.Add(-5*time.Second)),
		readyPod("held", now.Add(-50*time.Second), state(pub.LifecycleStatePreparingDelete)),
		gen.Pod("pending", gen.SetPodPhase(corev1.PodPending)),
	}
	if got, want := AvailableAfter(pods, 30, now), 11*time.Second; got != want {
		t.Errorf("AvailableAfter = %v, want %v (the soonest ready pod, a second late)", got, want)
	}
	if got := AvailableAfter(pods, 0, now); got != 0 {
		t.Errorf("AvailableAfter without minReadySeconds = %v, want 0", got)
	}
	if got := AvailableAfter(pods[:1], 30, now); got != 0 {
		t.Errorf("AvailableAfter of available pods = %v, want 0", got)
	}
}
