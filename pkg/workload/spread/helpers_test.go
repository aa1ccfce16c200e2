package spread

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cnt(i int32) *intstr.IntOrString  { v := intstr.FromInt32(i); return &v }
func pct(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }

func sub(name string, max *intstr.IntOrString) appsv1alpha1.WorkloadSpreadSubset {
	return appsv1alpha1.WorkloadSpreadSubset{Name: name, MaxReplicas: max}
}

func wsFor(apiVersion, kind string, subsets ...appsv1alpha1.WorkloadSpreadSubset) *appsv1alpha1.WorkloadSpread {
	return &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ws"},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: "app"},
			Subsets:         subsets,
		},
	}
}

func cloneSetWS(subsets ...appsv1alpha1.WorkloadSpreadSubset) *appsv1alpha1.WorkloadSpread {
	return wsFor("apps.kruise.io/v1alpha1", "CloneSet", subsets...)
}

func podNamed(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}}
}

// keys returns a newKey that yields k1, k2, ...
func keys() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("k%d", n) }
}

func entry(name string, replicas, missing int32, creating ...string) appsv1alpha1.WorkloadSpreadSubsetStatus {
	e := appsv1alpha1.WorkloadSpreadSubsetStatus{Name: name, Replicas: replicas, MissingReplicas: missing}
	if len(creating) > 0 {
		e.CreatingPods = map[string]metav1.Time{}
		for _, c := range creating {
			e.CreatingPods[c] = metav1.NewTime(t0)
		}
	}
	return e
}

func unschedulableCond() []appsv1alpha1.WorkloadSpreadSubsetCondition {
	return []appsv1alpha1.WorkloadSpreadSubsetCondition{{Type: appsv1alpha1.SubsetSchedulable, Status: corev1.ConditionFalse}}
}
