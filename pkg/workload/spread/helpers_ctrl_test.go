package spread

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

var tNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// subset is a subset named name with maxReplicas max ("" unlimited; "34%" a percentage).
func subset(name, max string) appsv1alpha1.WorkloadSpreadSubset {
	s := appsv1alpha1.WorkloadSpreadSubset{Name: name}
	if max != "" {
		v := intstr.Parse(max)
		s.MaxReplicas = &v
	}
	return s
}

func newWS(kind string, subsets ...appsv1alpha1.WorkloadSpreadSubset) *appsv1alpha1.WorkloadSpread {
	api := "apps/v1"
	if kind == "CloneSet" {
		api = "apps.kruise.io/v1alpha1"
	}
	return &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: "ws", Namespace: "ns", Generation: 3},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: api, Kind: kind, Name: "app"},
			Subsets:         subsets,
		},
	}
}

type podOpt func(*corev1.Pod)

// newPod is a running, ready Deployment pod of version "v1" in subset ("" none).
func newPod(name, subset string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(tNow.Add(-time.Hour)),
			Labels:            map[string]string{"pod-template-hash": "v1"}},
		Spec: corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(tNow.Add(-time.Hour))}}},
	}
	if subset != "" {
		annotate(subset, "")(p)
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func annotate(subset, uid string) podOpt {
	return func(p *corev1.Pod) {
		b, _ := json.Marshal(appsv1alpha1.InjectWorkloadSpread{Name: "ws", Subset: subset, UID: uid})
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation] = string(b)
	}
}

func version(v string) podOpt { return func(p *corev1.Pod) { p.Labels["pod-template-hash"] = v } }

func cost(v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[appsv1alpha1.PodDeletionCostAnnotation] = v
	}
}

func terminating() podOpt {
	return func(p *corev1.Pod) { now := metav1.NewTime(tNow); p.DeletionTimestamp = &now }
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func notReady() podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
}

// unschedulableSince makes the pod pending, unbound and Unschedulable, created at t.
func unschedulableSince(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(t)
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	}
}

func at(d time.Duration) metav1.Time { return metav1.NewTime(tNow.Add(d)) }
