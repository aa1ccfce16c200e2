package spread

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

// podsIn makes count pods per subset (in subsets' order), of version v1, created a second apart
// in that order.
func podsIn(counts map[string]int, subsets ...string) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, s := range subsets {
		for i := range counts[s] {
			p := newPod(fmt.Sprintf("%s-%d", s, i), s)
			p.CreationTimestamp = metav1.NewTime(tNow.Add(-time.Hour + time.Duration(len(pods))*time.Second))
			pods = append(pods, p)
		}
	}
	return pods
}

// writeCosts computes the costs for pods and puts them on the pods, returning how many changed.
func writeCosts(t *testing.T, ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod, replicas int32, latest string) int {
	t.Helper()
	patches, err := DeletionCosts(ws, Group(ws, pods, nil), replicas, latest, tNow)
	require.NoError(t, err)
	for _, p := range patches {
		if p.Pod.Annotations == nil {
			p.Pod.Annotations = map[string]string{}
		}
		p.Pod.Annotations[appsv1alpha1.PodDeletionCostAnnotation] = p.Cost
	}
	return len(patches)
}

func countBySubset(ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		out[SubsetOf(ws, p)]++
	}
	return out
}

// fillOf is where the webhook puts total pods: subset after subset, each up to its maxReplicas.
func fillOf(t *testing.T, ws *appsv1alpha1.WorkloadSpread, total int32) map[string]int {
	out := map[string]int{}
	left := total
	for i := range ws.Spec.Subsets {
		give := left
		max, unlimited, err := MaxReplicas(&ws.Spec.Subsets[i], total)
		require.NoError(t, err)
		if !unlimited {
			give = min(give, max)
		}
		if give > 0 {
			out[ws.Spec.Subsets[i].Name] = int(give)
		}
		left -= give
	}
	return out
}

// TestScaleInFollowsSpread: with the costs written once, the order in which CloneSet (podorder,
// the ReplicaSet controller's order) deletes pods leaves the webhook's fill at EVERY smaller count,
// each subset within its maxReplicas at that count (#877: OpenKruise's costs, computed for the
// current count, empty the later subsets first).
func TestScaleInFollowsSpread(t *testing.T) {
	for _, tt := range []struct {
		name    string
		subsets []appsv1alpha1.WorkloadSpreadSubset
		start   map[string]int
	}{{
		name:    "zones 34/33/33%, 9 pods",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", "34%"), subset("b", "33%"), subset("c", "33%")},
		start:   map[string]int{"a": 4, "b": 3, "c": 2},
	}, {
		name:    "zones 34/33/33%, 100 pods",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", "34%"), subset("b", "33%"), subset("c", "33%")},
		start:   map[string]int{"a": 34, "b": 33, "c": 33},
	}, {
		name:    "spot overflow: at most 2 ordinary, the rest on spot",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", "2"), subset("b", "")},
		start:   map[string]int{"a": 2, "b": 5},
	}, {
		name:    "a percentage, a count, then an unlimited last subset",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", "50%"), subset("b", "2"), subset("c", "")},
		start:   map[string]int{"a": 5, "b": 2, "c": 3},
	}, {
		name:    "ordered preference, all unlimited: later subsets empty first",
		subsets: []appsv1alpha1.WorkloadSpreadSubset{subset("a", ""), subset("b", ""), subset("c", "")},
		start:   map[string]int{"a": 2, "b": 2, "c": 2},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWS("CloneSet", tt.subsets...)
			pods := podsIn(tt.start, "a", "b", "c")
			total := int32(len(pods))
			writeCosts(t, ws, pods, total, "")
			for r := total - 1; r >= 1; r-- {
				pods = podorder.ForDeletion(pods, tNow)[1:]
				got := countBySubset(ws, pods)
				if len(ws.Spec.Subsets) == 3 && ws.Spec.Subsets[0].MaxReplicas == nil {
					// Every fill is all in a: what matters is that the later ones empty first.
					want := map[string]int{"a": min(int(r), 2)}
					for _, s := range []string{"b", "c"} {
						if n := int(r) - 2; n > 0 && s == "b" {
							want["b"] = min(n, 2)
						} else if n := int(r) - 4; n > 0 && s == "c" {
							want["c"] = n
						}
					}
					assert.Equal(t, want, got, "at %d", r)
					continue
				}
				assert.Equal(t, fillOf(t, ws, r), got, "at %d", r)
				for i := range ws.Spec.Subsets {
					max, unlimited, err := MaxReplicas(&ws.Spec.Subsets[i], r)
					require.NoError(t, err)
					assert.True(t, unlimited || got[ws.Spec.Subsets[i].Name] <= int(max), "subset %s at %d", ws.Spec.Subsets[i].Name, r)
				}
			}
		})
	}
}

// TestCostsReferenceValues: where OpenKruise's values already order scale-in as the spread
// requires, they are written, so that what reads them (the reference's tests, tools) sees them.
func TestCostsReferenceValues(t *testing.T) {
	ws := newWS("CloneSet", subset("a", "2"), subset("b", ""))
	pods := podsIn(map[string]int{"a": 2, "b": 5}, "a", "b")
	writeCosts(t, ws, pods, 7, "")
	for _, p := range pods {
		want := map[string]string{"a": "200", "b": "100"}[SubsetOf(ws, p)]
		assert.Equal(t, want, p.Annotations[appsv1alpha1.PodDeletionCostAnnotation], p.Name)
	}
	// Zones 3/2/1 cannot be ordered by one cost per subset (a loses the first pod): slot costs.
	ws = newWS("CloneSet", subset("a", "34%"), subset("b", "33%"), subset("c", "33%"))
	pods = podsIn(map[string]int{"a": 3, "b": 2, "c": 1}, "a", "b", "c")
	writeCosts(t, ws, pods, 6, "")
	for _, p := range pods {
		assert.Greater(t, len(p.Annotations[appsv1alpha1.PodDeletionCostAnnotation]), 3, p.Name)
	}
}

// TestOldVersionsFirst: every pod of a version other than latest costs strictly less than every
// latest pod, in no subset and surplus ones included (a surge pod is never deleted before an old
// one).
func TestOldVersionsFirst(t *testing.T) {
	ws := newWS("Deployment", subset("a", "1"), subset("b", "50%"), subset("c", ""))
	var pods []*corev1.Pod
	for i, s := range []string{"a", "a", "b", "b", "b", "c", "c", ""} {
		pods = append(pods, newPod(fmt.Sprintf("old-%d", i), s), newPod(fmt.Sprintf("new-%d", i), s, version("v2")))
	}
	writeCosts(t, ws, pods, 8, "v2")
	maxOld, minNew := int64(-1<<62), int64(1<<62)
	for _, p := range pods {
		var c int64
		_, err := fmt.Sscan(p.Annotations[appsv1alpha1.PodDeletionCostAnnotation], &c)
		require.NoError(t, err, p.Name)
		assert.NotZero(t, c, p.Name)
		assert.True(t, c >= -1<<31 && c < 1<<31, "%s: %d fits int32", p.Name, c)
		if p.Labels["pod-template-hash"] == "v2" {
			minNew = min(minNew, c)
		} else {
			maxOld = max(maxOld, c)
		}
	}
	assert.Less(t, maxOld, minNew)
	// Old pods leave the first subsets first, so that the new ones fill them.
	order := podorder.ForDeletion(pods, tNow)
	assert.Equal(t, "", SubsetOf(ws, order[0]))
	assert.Equal(t, "a", SubsetOf(ws, order[1]))
}

// TestCostsStable: adding the pod the webhook would add next, or deleting the pod scale-in would
// delete next, patches no other pod (each change is a pod PATCH; 10,000-pod workloads).
func TestCostsStable(t *testing.T) {
	ws := newWS("CloneSet", subset("a", "34%"), subset("b", "33%"), subset("c", "33%"))
	pods := podsIn(map[string]int{"a": 34, "b": 33, "c": 33}, "a", "b", "c")
	writeCosts(t, ws, pods, 100, "")
	assert.Zero(t, writeCosts(t, ws, pods, 100, ""), "idle")
	patches := 0
	for r := 101; r <= 120; r++ {
		before, after := fillOf(t, ws, int32(r-1)), fillOf(t, ws, int32(r))
		var to string
		for _, s := range []string{"a", "b", "c"} {
			if to == "" && after[s] > before[s] {
				to = s
			}
		}
		p := newPod(fmt.Sprintf("new-%d", r), to)
		p.CreationTimestamp = metav1.NewTime(tNow.Add(-time.Minute))
		p.UID = types.UID(p.Name)
		pods = append(pods, p)
		changed := writeCosts(t, ws, pods, int32(r), "")
		// The new pod, and at most one whose slot moved as percentages round (fill(101) gives c
		// one pod fewer than fill(100)).
		assert.LessOrEqual(t, changed, 2, "adding a pod into %s at %d", to, r)
		patches += changed
	}
	assert.LessOrEqual(t, patches, 22, "20 pods added")
	for r := 119; r >= 90; r-- {
		pods = podorder.ForDeletion(pods, tNow)[1:]
		assert.Zero(t, writeCosts(t, ws, pods, int32(r), ""), "scaled in to %d", r)
	}
	// The most valuable pod of a subset deleted out of turn (a node failure): the pod that held the
	// subset's last slot takes its slot; its replacement takes the last slot again.
	order := podorder.ForDeletion(pods, tNow)
	lost := order[len(order)-1]
	pods = order[:len(order)-1]
	assert.Equal(t, 1, writeCosts(t, ws, pods, 90, ""), "a pod deleted out of turn")
	p := newPod("replacement", SubsetOf(ws, lost))
	p.UID = "replacement"
	pods = append(pods, p)
	assert.Equal(t, 1, writeCosts(t, ws, pods, 90, ""), "its replacement")
	// And scale-in still follows the spread.
	for r := 89; r >= 1; r-- {
		pods = podorder.ForDeletion(pods, tNow)[1:]
		require.Equal(t, fillOf(t, ws, int32(r)), countBySubset(ws, pods), "at %d", r)
	}
}
