package cloneset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
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

func TestFacts(t *testing.T) {
	rev := func(r string) gen.PodModifier {
		return gen.AddPodLabels(map[string]string{"controller-revision-hash": r})
	}
	pods := []*corev1.Pod{
		readyPod("new", t0, rev("web-2")),
		readyPod("old", t0, rev("web-1")),
		readyPod("label-deleted", t0, rev("web-1"), gen.AddPodLabels(map[string]string{appsv1beta1.SpecifiedDeleteKey: "true"})),
		readyPod("listed", t0, rev("web-2")),
		readyPod("hooked", t0, rev("web-1"), state(pub.LifecycleStatePreparingDelete), gen.AddPodLabels(map[string]string{appsv1beta1.SpecifiedDeleteKey: "true"})),
	}
	got := Facts(pods, FactsOptions{
		UpdateRevision: "web-2", Now: t0, PodsToDelete: map[string]bool{"listed": true},
		Recreate: func(p *corev1.Pod) bool { return p.Name == "old" },
	})
	want := []PodFacts{
		{Updated: true, Available: true},
		{Available: true, Recreate: true},
		{Available: true, SpecifiedDelete: true},
		{Updated: true, Available: true, SpecifiedDelete: true},
		{PreparingDelete: true},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pod %s: %+v, want %+v", pods[i].Name, got[i], want[i])
		}
	}
}

func TestActive(t *testing.T) {
	if !Active(gen.Pod("p", gen.SetPodPhase(corev1.PodRunning))) {
		t.Error("a running pod is not active")
	}
	for _, p := range []*corev1.Pod{
		gen.Pod("p", gen.SetPodPhase(corev1.PodFailed)),
		gen.Pod("p", gen.SetPodPhase(corev1.PodSucceeded)),
		gen.Pod("p", gen.SetPodDeletionTimestamp(t0)),
	} {
		if Active(p) {
			t.Errorf("pod %+v is active", p.Status)
		}
	}
}
