package spread

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// counts is a subset's replicas, missingReplicas, creatingPods and deletingPods keys.
type counts struct {
	replicas, missing  int32
	creating, deleting []string
}

func countsOf(st appsv1alpha1.WorkloadSpreadSubsetStatus) counts {
	c := counts{replicas: st.Replicas, missing: st.MissingReplicas}
	for k := range st.CreatingPods {
		c.creating = append(c.creating, k)
	}
	for k := range st.DeletingPods {
		c.deleting = append(c.deleting, k)
	}
	return c
}

func TestComputeStatus(t *testing.T) {
	tests := []struct {
		name     string
		subsets  []appsv1alpha1.WorkloadSpreadSubset
		old      []appsv1alpha1.WorkloadSpreadSubsetStatus
		pods     []*corev1.Pod
		replicas int32
		want     map[string]counts
		expired  []Mark
		requeue  time.Duration
	}{{
		name:     "active pods per subset; terminating and finished ones do not count; nil maxReplicas is -1",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "3"), subset("b", "")},
		replicas: 5,
		pods: []*corev1.Pod{newPod("p1", "a"), newPod("p2", "a"), newPod("p3", "a", terminating()),
			newPod("p4", "b", phase(corev1.PodFailed)), newPod("p5", "b", phase(corev1.PodSucceeded)), newPod("p6", "b"), newPod("p7", "b", phase(corev1.PodPending))},
		want: map[string]counts{"a": {replicas: 2, missing: 1}, "b": {replicas: 2, missing: -1}},
	}, {
		name:     "percentages of the replicas, rounded up: 34/33/33% of 10",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "34%"), subset("b", "33%"), subset("c", "33%")},
		replicas: 10,
		pods:     []*corev1.Pod{newPod("p1", "a"), newPod("p2", "a"), newPod("p3", "a"), newPod("p4", "a"), newPod("p5", "b")},
		want:     map[string]counts{"a": {replicas: 4, missing: 0}, "b": {replicas: 1, missing: 3}, "c": {missing: 4}},
	}, {
		name:     "an over-full subset has no room, never a negative one",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "1")},
		replicas: 3,
		pods:     []*corev1.Pod{newPod("p1", "a"), newPod("p2", "a"), newPod("p3", "a")},
		want:     map[string]counts{"a": {replicas: 3, missing: 0}},
	}, {
		name:     "creating pods are kept until observed (by name or by the admission key) or 30 s have passed",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "5")},
		replicas: 5,
		old: []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", CreatingPods: map[string]metav1.Time{
			"seen": at(-time.Second), "seen-uid": at(-time.Second), "pending": at(-20 * time.Second), "pending2": at(-5 * time.Second), "old": at(-30 * time.Second)}}},
		pods:    []*corev1.Pod{newPod("seen", "a"), newPod("generated-x", "a", annotate("a", "seen-uid"))},
		want:    map[string]counts{"a": {replicas: 2, missing: 1, creating: []string{"pending", "pending2"}}},
		expired: []Mark{{Subset: "a", Pod: "old"}},
		requeue: 10 * time.Second,
	}, {
		name:     "deleting pods are kept while the pod is active, for 15 s; their replica counts as room",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "3")},
		replicas: 3,
		old: []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", DeletingPods: map[string]metav1.Time{
			"d1": at(-time.Second), "gone": at(-time.Second), "terminating": at(-time.Second), "late": at(-15 * time.Second)}}},
		pods:    []*corev1.Pod{newPod("d1", "a"), newPod("terminating", "a", terminating()), newPod("late", "a"), newPod("p", "a")},
		want:    map[string]counts{"a": {replicas: 3, missing: 1, deleting: []string{"d1"}}},
		expired: []Mark{{Subset: "a", Pod: "late", Deleting: true}},
		requeue: 14 * time.Second,
	}, {
		name:     "missingReplicas = max - replicas - creating + deleting",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("a", "6")},
		replicas: 6,
		old: []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", CreatingPods: map[string]metav1.Time{"c1": at(0), "c2": at(0)},
			DeletingPods: map[string]metav1.Time{"p1": at(0)}}},
		pods:    []*corev1.Pod{newPod("p1", "a"), newPod("p2", "a")},
		want:    map[string]counts{"a": {replicas: 2, missing: 3, creating: []string{"c1", "c2"}, deleting: []string{"p1"}}},
		requeue: 15 * time.Second,
	}, {
		name:     "subsets renamed, reordered and removed: entries matched by name, pods of a removed subset in none",
		subsets:  []appsv1alpha1.WorkloadSpreadSubset{subset("c", "2"), subset("a", "2")},
		replicas: 4,
		old: []appsv1alpha1.WorkloadSpreadSubsetStatus{
			{Name: "a", Replicas: 1, CreatingPods: map[string]metav1.Time{"ca": at(0)}},
			{Name: "b", Replicas: 2, CreatingPods: map[string]metav1.Time{"cb": at(0)}}},
		pods:    []*corev1.Pod{newPod("p1", "a"), newPod("p2", "b"), newPod("p3", "b")},
		want:    map[string]counts{"c": {missing: 2}, "a": {replicas: 1, missing: 0, creating: []string{"ca"}}},
		requeue: 30 * time.Second,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWS("Deployment", tt.subsets...)
			ws.Status.SubsetStatuses = tt.old
			res, err := ComputeStatus(ws, Group(ws, tt.pods, nil), tt.replicas, tNow)
			require.NoError(t, err)
			assert.Equal(t, int64(3), res.Status.ObservedGeneration)
			require.Len(t, res.Status.SubsetStatuses, len(tt.subsets))
			got := map[string]counts{}
			for i, st := range res.Status.SubsetStatuses {
				assert.Equal(t, tt.subsets[i].Name, st.Name, "spec order")
				got[st.Name] = countsOf(st)
			}
			for name, w := range tt.want {
				assert.Equal(t, w.replicas, got[name].replicas, name)
				assert.Equal(t, w.missing, got[name].missing, name)
				assert.ElementsMatch(t, w.creating, got[name].creating, name)
				assert.ElementsMatch(t, w.deleting, got[name].deleting, name)
			}
			assert.Equal(t, tt.expired, res.Expired)
			assert.Equal(t, tt.requeue, res.Requeue)
			assert.Empty(t, res.Reschedule)
		})
	}
}

func TestComputeStatusVersions(t *testing.T) {
	ws := newWS("Deployment", subset("a", "2"), subset("b", ""))
	ws.Status.VersionedSubsetStatuses = map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{
		// v0's pods are gone and its marks too: dropped.
		"v0": {{Name: "a", Replicas: 1}},
		// v9's pods are gone but a creation is pending: kept.
		"v9": {{Name: "a", CreatingPods: map[string]metav1.Time{"c": at(-time.Second)}}},
	}
	pods := []*corev1.Pod{newPod("p1", "a"), newPod("p2", "a", version("v2")), newPod("p3", "b", version("v2")), newPod("p4", "")}
	res, err := ComputeStatus(ws, Group(ws, pods, nil), 4, tNow)
	require.NoError(t, err)
	v := res.Status.VersionedSubsetStatuses
	require.Len(t, v, 3)
	assert.NotContains(t, v, "v0")
	assert.Equal(t, []counts{{replicas: 1, missing: 1}, {missing: -1}}, []counts{countsOf(v["v1"][0]), countsOf(v["v1"][1])})
	assert.Equal(t, []counts{{replicas: 1, missing: 1}, {replicas: 1, missing: -1}}, []counts{countsOf(v["v2"][0]), countsOf(v["v2"][1])})
	assert.Equal(t, counts{missing: 1, creating: []string{"c"}}, countsOf(v["v9"][0]))
	// The whole workload's counts: p4 is in no subset.
	assert.Equal(t, counts{replicas: 2, missing: 0}, countsOf(res.Status.SubsetStatuses[0]))
	assert.Equal(t, counts{replicas: 1, missing: -1}, countsOf(res.Status.SubsetStatuses[1]))
}

func TestComputeStatusCloneSetVersions(t *testing.T) {
	ws := newWS("CloneSet", subset("a", ""))
	mk := func(name, rev string) *corev1.Pod {
		p := newPod(name, "a")
		p.Labels = map[string]string{"controller-revision-hash": rev}
		return p
	}
	res, err := ComputeStatus(ws, Group(ws, []*corev1.Pod{mk("p1", "app-r1"), mk("p2", "app-r2"), mk("p3", "app-r2")}, nil), 3, tNow)
	require.NoError(t, err)
	require.Len(t, res.Status.VersionedSubsetStatuses, 2, "surge (#834): CloneSet pods are counted per revision")
	var n []int32
	for _, ss := range res.Status.VersionedSubsetStatuses {
		n = append(n, ss[0].Replicas)
	}
	assert.ElementsMatch(t, []int32{1, 2}, n)
}

func TestGroupAdopted(t *testing.T) {
	ws := newWS("Deployment", subset("a", ""))
	other := newPod("other-ws", "")
	other.Annotations = map[string]string{appsv1alpha1.MatchedWorkloadSpreadAnnotation: `{"name":"another","subset":"a"}`}
	pods := []*corev1.Pod{newPod("plain", ""), other, newPod("in-a", "a")}
	g := Group(ws, pods, map[types.UID]string{"uid-plain": "a"})
	assert.Len(t, g["v1"]["a"], 2)
	assert.Equal(t, []*corev1.Pod{other}, g["v1"][NoSubset])
}

func TestComputeStatusIdempotent(t *testing.T) {
	// A status computed from the same pods again is the same: the controller then writes nothing.
	ws := newWS("Deployment", subset("a", "2"), subset("b", ""))
	ws.Spec.ScheduleStrategy = adaptive(60)
	pods := []*corev1.Pod{newPod("p1", "a"), newPod("p2", "b")}
	res, err := ComputeStatus(ws, Group(ws, pods, nil), 2, tNow)
	require.NoError(t, err)
	ws.Status = res.Status
	again, err := ComputeStatus(ws, Group(ws, pods, nil), 2, tNow.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, res.Status, again.Status)
	assert.Zero(t, again.Requeue)
}
