package cloneset

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

func TestPodChangeMatters(t *testing.T) {
	cs := cloneSet(1, "app:1")
	rev := revisionOf(t, cs, 1)
	base := runningPod(t, cs, rev, "aaaaa")
	for _, tc := range []struct {
		name    string
		change  func(*corev1.Pod)
		matters bool
	}{
		{name: "a probe's time", change: func(p *corev1.Pod) {
			p.Status.Conditions[0].LastProbeTime = metav1.NewTime(t0)
		}},
		{name: "a condition's message", change: func(p *corev1.Pod) { p.Status.Conditions[0].Message = "x" }},
		{name: "the pod IP", change: func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.9" }},
		{name: "a container's start time", change: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(t0)
		}},
		{name: "preNormal hook label added (OpenKruise #2060)", matters: true, change: func(p *corev1.Pod) { p.Labels["hook"] = "ok" }},
		{name: "preNormal hook finalizer added (OpenKruise #2060)", matters: true, change: func(p *corev1.Pod) {
			p.Finalizers = append(p.Finalizers, "example.com/hook")
		}},
		{name: "pod failed (OpenKruise #2481)", matters: true, change: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }},
		{name: "readiness lost", matters: true, change: func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }},
		{name: "container restarted", matters: true, change: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].ContainerID = "containerd://new"
		}},
		{name: "the kubelet synced a new generation (gate release)", matters: true, change: func(p *corev1.Pod) { p.Status.ObservedGeneration++ }},
		{name: "in-place update state", matters: true, change: func(p *corev1.Pod) { p.Annotations[pub.InPlaceUpdateStateKey] = "{}" }},
		{name: "deleted", matters: true, change: func(p *corev1.Pod) { now := metav1.NewTime(t0); p.DeletionTimestamp = &now }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := podChangeMatters(base, cur); got != tc.matters {
				t.Errorf("podChangeMatters = %v, want %v", got, tc.matters)
			}
		})
	}
}

// With the gate on, a pod's preNormal hook being put on (OpenKruise #2060) and a pod failing
// (#2481) still reach the CloneSet's queue, and each then moves on.
func TestNoiseFilterKeepsHookAndFailure(t *testing.T) {
	cs := cloneSet(1, "app:1")
	cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"hook": "ok"}}}
	rev := revisionOf(t, cs, 1)
	pod := runningPod(t, cs, rev, "aaaaa")
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, pod)
	f.ctrl.podEvents.Noise = podNoise

	hooked := pod.DeepCopy()
	hooked.ResourceVersion = "2"
	hooked.Labels["hook"] = "ok"
	f.ctrl.podEvents.Handler().OnUpdate(pod, hooked)
	if f.ctrl.queue.Len() != 1 {
		t.Fatalf("the preNormal hook's label did not enqueue the CloneSet")
	}
	key, _ := f.ctrl.queue.Get()
	f.ctrl.queue.Done(key)

	failed := hooked.DeepCopy()
	failed.ResourceVersion = "3"
	failed.Status.Phase = corev1.PodFailed
	f.ctrl.podEvents.Handler().OnUpdate(hooked, failed)
	if f.ctrl.queue.Len() != 1 {
		t.Fatalf("a failed pod did not enqueue the CloneSet")
	}
	key, _ = f.ctrl.queue.Get()
	f.ctrl.queue.Done(key)

	noise := failed.DeepCopy()
	noise.ResourceVersion = "4"
	noise.Status.Conditions[0].LastProbeTime = metav1.NewTime(t0.Add(time.Second))
	f.ctrl.podEvents.Handler().OnUpdate(failed, noise)
	if f.ctrl.queue.Len() != 0 {
		t.Errorf("a probe time alone enqueued the CloneSet")
	}

	// And each moves on: the hooked pod goes Normal; a failed pod is replaced.
	f = newFixture(t, cs, []*appsv1.ControllerRevision{rev}, hooked)
	f.sync()
	if !patched(f, string(pub.LifecycleStateNormal)) {
		t.Errorf("the hooked pod did not go Normal: %v", f.actions())
	}
	f = newFixture(t, cs, []*appsv1.ControllerRevision{rev}, failed)
	f.sync()
	created := false
	for _, a := range f.actions() {
		created = created || (a.GetVerb() == "create" && a.GetResource().Resource == "pods")
	}
	if !created {
		t.Errorf("the failed pod was not replaced: %v", f.actions())
	}
}
