package daemonset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// dpod is a daemon pod for tests: name, node, revision, created at t0+age seconds, ready since
// t0 when ready.
type dpodOpt func(*corev1.Pod)

func dpod(name, node, rev string, opts ...dpodOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
}

func readyAt(at time.Time) dpodOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	}
}

func createdAt(sec int) dpodOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(sec) * time.Second)) }
}

func phase(ph corev1.PodPhase) dpodOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func terminating(p *corev1.Pod) { ts := metav1.NewTime(t0); p.DeletionTimestamp = &ts }

func preparingDelete(p *corev1.Pod) {
	p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingDelete)
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

var (
	run  = Eligibility{ShouldRun: true, ShouldContinueRunning: true}
	keep = Eligibility{ShouldContinueRunning: true}
	off  = Eligibility{}
)

func node(name string, e Eligibility, pods ...*corev1.Pod) NodeState {
	return NodeState{Name: name, Eligibility: e, Pods: pods}
}
