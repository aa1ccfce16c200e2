package podbudget

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/test/unit/gen"
)

const ns = "default"

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// readyPod is a running, Ready pod in ns created at t0 with labels app=web, changed by mods.
func readyPod(name string, mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{
		gen.SetPodNamespace(ns),
		gen.AddPodLabels(map[string]string{"app": "web"}),
		gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}),
		func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour)) },
	}
	return gen.Pod(name, append(base, mods...)...)
}

func notReady(p *corev1.Pod) {
	gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})(p)
}

// ownedBy makes ref the pod's controller.
func ownedBy(apiVersion, kind, name string) gen.PodModifier {
	yes := true
	return gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes})
}

func controllerRef(apiVersion, kind, name string) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &yes}
}
