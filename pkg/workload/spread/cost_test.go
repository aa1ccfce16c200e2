package spread

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func costsByPod(patches []CostPatch) map[string]string {
	out := map[string]string{}
	for _, p := range patches {
		out[p.Pod.Name] = p.Cost
	}
	return out
}

func TestDeletionCosts(t *testing.T) {
	tests := []struct {
		name     string
		subsets  []appsv1alpha1.WorkloadSpreadSubset
		pods     []*corev1.Pod
		replicas int32
		latest   string
		want     map[string]string
	}{{
		name:     "subset i of n: 100*(n-i) within maxReplicas",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "2"), subset("b", "2"), subset("c", "")},
		replicas: 5,
		pods:     []*corev1.Pod{newPod("a1", "a"), newPod("b1", "b"), newPod("c1", "c"), newPod("c2", "c")},
		want:     map[string]string{"a1": "300", "b1": "200", "c1": "100", "c2": "100"},
	}, {
		name:     "surplus pods -100*(i+1), the least healthy first; pods in no subset -100*(n+1); inactive pods untouched",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "1"), subset("b", "1")},
		replicas: 2,
		pods: []*corev1.Pod{newPod("a1", "a"), newPod("a2", "a", notReady()), newPod("b1", "b"), newPod("b2", "b", notReady()), newPod("b3", "b", notReady()),
			newPod("none", ""), newPod("gone", "a", terminating())},
		want: map[string]string{"a1": "200", "a2": "-100", "b1": "100", "b2": "-200", "b3": "-200", "none": "-300"},
	}, {
		name:     "a percentage of the replicas",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "50%"), subset("b", "50%")},
		replicas: 2,
		pods:     []*corev1.Pod{newPod("a1", "a"), newPod("a2", "a", notReady()), newPod("b1", "b")},
		want:     map[string]string{"a1": "200", "a2": "-100", "b1": "100"},
	}, {
		// OpenKruise's values would give old-a and new-c both 100: slot costs instead, every old
		// pod below every latest one.
		name:     "versions other than the latest go first and rank the subsets in reverse",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", ""), subset("b", ""), subset("c", "")},
		replicas: 6,
		latest:   "v2",
		pods: []*corev1.Pod{newPod("new-a", "a", version("v2")), newPod("new-c", "c", version("v2")),
			newPod("old-a", "a"), newPod("old-c", "c"), newPod("old-none", "")},
		want: map[string]string{"new-a": "999999997", "new-c": "497999999", "old-a": "-502000001", "old-c": "-3", "old-none": "-999999999"},
	}, {
		name:     "only pods whose annotation differs",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", ""), subset("b", "")},
		replicas: 2,
		pods:     []*corev1.Pod{newPod("a1", "a", cost("200")), newPod("b1", "b", cost("5"))},
		want:     map[string]string{"b1": "100"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWS("Deployment", tt.subsets...)
			patches, err := DeletionCosts(ws, Group(ws, tt.pods, nil), tt.replicas, tt.latest, tNow)
			require.NoError(t, err)
			assert.Equal(t, tt.want, costsByPod(patches))
		})
	}
}

func TestNeverZeroOnUnannotated(t *testing.T) {
	var got []CostPatch
	ws := newWS("Deployment", subset("a", ""))
	p := newPod("p", "a")
	got, err := DeletionCosts(ws, Group(ws, []*corev1.Pod{p}, nil), 1, "", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, "100", costsByPod(got)["p"])
}

func TestCostsApply(t *testing.T) {
	for _, tt := range []struct {
		api, kind string
		want      bool
	}{{"apps/v1", "Deployment", true}, {"apps/v1", "ReplicaSet", true}, {"apps.kruise.io/v1alpha1", "CloneSet", true},
		{"apps.kruise.io/v1beta1", "CloneSet", true}, {"apps.kruise.io/v1beta1", "StatefulSet", false}, {"apps/v1", "StatefulSet", false},
		{"batch/v1", "Job", false}, {"example.com/v1", "Deployment", false}} {
		assert.Equal(t, tt.want, CostsApply(appsv1alpha1.TargetReference{APIVersion: tt.api, Kind: tt.kind}), tt.api+" "+tt.kind)
	}
}

func TestLatestVersion(t *testing.T) {
	assert.Equal(t, "abc", LatestVersion(appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment"}, "abc"))
	assert.Equal(t, "", LatestVersion(appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment"}, ""))
	assert.Equal(t, PodVersion(&corev1.Pod{}, appsv1alpha1.TargetReference{APIVersion: "batch/v1", Kind: "Job"}),
		LatestVersion(appsv1alpha1.TargetReference{APIVersion: "batch/v1", Kind: "Job"}, "abc"))
}
