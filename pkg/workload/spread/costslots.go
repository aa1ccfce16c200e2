package spread

import (
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

// Slot costs keep the spread at every smaller replica count (#877). The workload's controller
// deletes pods as soon as it scales in, before any controller could rewrite costs, so the costs in
// place must already order every scale-in. fill(T) is where the webhook puts T pods: subset
// after subset, each up to its maxReplicas at total T (percentages of T). The k-th most valuable
// pod of a subset (podorder's deletion order read backwards) belongs to the smallest total T from
// which on fill gives the subset k pods; deleting the pods of the largest T first leaves fill(T)
// at every count. The costs of a subset depend on (subset, k) alone and a pod keeps the one it
// has while the subset still needs it (dealValues), so adding a pod, a scale-in or a pod deleted
// out of turn patch one pod or none.
//
// Bands, from deleted last to deleted first (all within int32, never 0):
//
//	latest version, slot T of the subset at position p of n: slotBase - (T*n + p)   (500,000,000, 1,000,000,000)
//	latest version, k-th pod beyond any fill (surplus):      surplusBase - 1 - (p*m + k), m = min(keyCap/n, 10⁶)  [2, 500,000,000)
//	latest version, in no subset:                            1
//	versions other than latest: the same minus oldShift, the subsets in reverse order, so that
//	every old pod costs strictly less than every latest pod.
const (
	slotBase    = 1_000_000_000
	surplusBase = 500_000_000
	keyCap      = surplusBase - 2
	oldShift    = 1_000_000_000
	// surplusPerSubset spaces the subsets' surplus bands (fewer with many subsets).
	surplusPerSubset = 1_000_000
)

// slotCosts gives every active pod of groups its slot cost, and its version and subset (the key
// that ordersAlike compares). Versions other than latest fill the subsets in reverse order.
func slotCosts(ws *appsv1alpha1.WorkloadSpread, groups Groups, latest string, now time.Time) (map[*corev1.Pod]int, map[*corev1.Pod][2]string, error) {
	out := map[*corev1.Pod]int{}
	keys := map[*corev1.Pod][2]string{}
	n := len(ws.Spec.Subsets)
	for version, bySubset := range groups {
		old := latest != "" && version != latest
		order := make([]int, n)
		for i := range order {
			order[i] = i
			if old {
				order[i] = n - 1 - i
			}
		}
		shift := 0
		if old {
			shift = -oldShift
		}
		// Pods of each subset, the most valuable first.
		ranked := make([][]*corev1.Pod, n)
		total := 0
		for i := range ws.Spec.Subsets {
			pods := activeOf(bySubset[ws.Spec.Subsets[i].Name])
			if len(pods) > 1 {
				pods = podorder.ForDeletion(pods, now)
				slices.Reverse(pods)
			}
			ranked[i] = pods
			total += len(pods)
			for _, p := range pods {
				keys[p] = [2]string{version, ws.Spec.Subsets[i].Name}
			}
		}
		for _, p := range activeOf(bySubset[NoSubset]) {
			out[p] = 1 + shift
			keys[p] = [2]string{version, NoSubset}
		}
		slots, err := fillSlots(ws, order, ranked, total)
		if err != nil {
			return nil, nil, err
		}
		for pos, i := range order {
			values := make([]int, len(ranked[i]))
			for k := range values {
				if slots[i][k] > 0 {
					values[k] = slotBase - min(slots[i][k]*n+pos, keyCap) + shift
					continue
				}
				// Surplus: the later subsets' first, each subset's least valuable first.
				perSubset := min(keyCap/n, surplusPerSubset)
				values[k] = surplusBase - 1 - (pos*perSubset + min(k, perSubset-1)) + shift
			}
			maps.Copy(out, dealValues(ranked[i], values))
		}
	}
	return out, keys, nil
}

// dealValues gives a subset's pods (the most valuable first) its values (the same count): a pod
// keeps a cost it carries that is still one of them, the others get those left, the highest to the
// most valuable. Which pod of a subset holds which slot does not change the subsets' sequence in a
// scale-in (the workload's own order still takes unready pods first), so keeping them means a pod
// deleted out of turn (a node failure) or its replacement patches one pod, not the subset's
// less valuable half.
func dealValues(pods []*corev1.Pod, values []int) map[*corev1.Pod]int {
	free := map[int]int{}
	for _, v := range values {
		free[v]++
	}
	out := make(map[*corev1.Pod]int, len(pods))
	var rest []*corev1.Pod
	for _, p := range pods {
		cur, err := strconv.Atoi(p.Annotations[appsv1alpha1.PodDeletionCostAnnotation])
		if err == nil && free[cur] > 0 {
			free[cur]--
			out[p] = cur
			continue
		}
		rest = append(rest, p)
	}
	var left []int
	for v, c := range free {
		for range c {
			left = append(left, v)
		}
	}
	slices.Sort(left)
	slices.Reverse(left)
	for j, p := range rest {
		out[p] = left[j]
	}
	return out
}

// fillSlots returns, by subset index, the smallest total T from which on fill gives the subset 1,
// 2, ... pods (a fill that drops again, as percentages round, moves the slot up), for as many pods
// as the subset holds; 0 for none. It looks at totals up to the pods held, then on up to about
// twice that for the pods still without a slot; a pod further out is surplus.
func fillSlots(ws *appsv1alpha1.WorkloadSpread, order []int, ranked [][]*corev1.Pod, total int) ([][]int, error) {
	slots := make([][]int, len(order))
	for i := range slots {
		slots[i] = make([]int, len(ranked[i]))
	}
	limit := 2*total + len(order)
	for t := 1; t <= limit; t++ {
		left, done := int32(t), true
		for _, i := range order {
			give := left
			max, unlimited, err := MaxReplicas(&ws.Spec.Subsets[i], int32(t))
			if err != nil {
				return nil, err
			}
			if !unlimited {
				give = min(give, max)
			}
			left -= give
			for k := range slots[i] {
				switch {
				case k >= int(give):
					slots[i][k] = 0
					done = false
				case slots[i][k] == 0:
					slots[i][k] = t
				}
			}
		}
		if done && t >= total {
			break
		}
	}
	return slots, nil
}

// ordersAlike reports whether costs order the pods as want does: sorted by want, the costs never
// decrease, and rise strictly wherever the pod's version or subset changes, so that scale-in
// empties the subsets in the same sequence.
func ordersAlike(want, costs map[*corev1.Pod]int, keys map[*corev1.Pod][2]string) bool {
	pods := make([]*corev1.Pod, 0, len(want))
	for p := range want {
		pods = append(pods, p)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return want[a] - want[b] })
	for j := 1; j < len(pods); j++ {
		a, b := pods[j-1], pods[j]
		if costs[a] > costs[b] || (costs[a] == costs[b] && keys[a] != keys[b]) {
			return false
		}
	}
	return true
}
