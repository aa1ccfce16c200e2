package spread

import (
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

// The steps of the deletion costs (OpenKruise's values): subset i of n gives its pods within
// maxReplicas costStep*(n-i) and its surplus pods -costStep*(i+1); pods in no subset get
// -costStep*(n+1). Scale-in deletes lower costs first: pods in no subset, then the surplus of the
// later subsets, then the later subsets' pods.
const costStep = 100

// CostsApply reports whether the target's controller orders scale-in by
// controller.kubernetes.io/pod-deletion-cost: the built-in ReplicaSet (and so Deployment) and
// CloneSet (pkg/workload/podorder). An Advanced StatefulSet removes the highest ordinals and a Job
// does not scale in, so their pods get no cost.
func CostsApply(ref appsv1alpha1.TargetReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	switch {
	case gv.Group == "apps" && (ref.Kind == "Deployment" || ref.Kind == "ReplicaSet"):
		return true
	case gv.Group == appsv1alpha1.GroupName && ref.Kind == "CloneSet":
		return true
	}
	return false
}

// CostPatch is a deletion cost to write onto a pod whose annotation differs.
type CostPatch struct {
	Pod  *corev1.Pod
	Cost string
}

// DeletionCosts are the pod-deletion-cost values the active pods should carry, for those whose
// annotation differs. They order every scale-in, to any smaller count, so that the spread holds
// (slot costs, costslots.go). Where OpenKruise's values (by subset: within maxReplicas at
// replicas, surplus, in no subset) already give that order, those are written instead, so that
// tools reading them see the reference's values. Versions other than latest (the workload's
// update version, "" when not known) go first and rank the subsets in reverse, so that a rolling
// update removes old pods from the first subsets first and the new ones fill them (OpenKruise's
// rule). A pod without the annotation is never given "0", which would change nothing.
func DeletionCosts(ws *appsv1alpha1.WorkloadSpread, groups Groups, replicas int32, latest string, now time.Time) ([]CostPatch, error) {
	n := len(ws.Spec.Subsets)
	reference := map[*corev1.Pod]int{}
	var pods []*corev1.Pod
	add := func(active []*corev1.Pod, cost int) {
		for _, p := range active {
			reference[p] = cost
			pods = append(pods, p)
		}
	}
	for _, version := range slices.Sorted(maps.Keys(groups)) {
		bySubset := groups[version]
		reverse := latest != "" && version != latest
		for i := range ws.Spec.Subsets {
			subset := &ws.Spec.Subsets[i]
			rank := i
			if reverse {
				rank = n - 1 - i
			}
			active := activeOf(bySubset[subset.Name])
			keep, surplus := len(active), 0
			limit, unlimited, err := MaxReplicas(subset, replicas)
			if err != nil {
				return nil, err
			}
			if !unlimited && int32(len(active)) > limit {
				keep, surplus = int(limit), len(active)-int(limit)
				// The least healthy go first, so they are the surplus.
				active = podorder.ForDeletion(active, now)
			}
			add(active[:surplus], -costStep*(rank+1))
			add(active[surplus:surplus+keep], costStep*(n-rank))
		}
		add(activeOf(bySubset[NoSubset]), -costStep*(n+1))
	}
	slots, keys, err := slotCosts(ws, groups, latest, now)
	if err != nil {
		return nil, err
	}
	costs := reference
	if !ordersAlike(slots, reference, keys) {
		costs = slots
	}
	var out []CostPatch
	for _, p := range pods {
		v := strconv.Itoa(costs[p])
		cur, ok := p.Annotations[appsv1alpha1.PodDeletionCostAnnotation]
		if (ok && cur == v) || (!ok && v == "0") {
			continue
		}
		out = append(out, CostPatch{Pod: p, Cost: v})
	}
	return out, nil
}

func activeOf(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if Active(p) {
			out = append(out, p)
		}
	}
	return out
}

// LatestVersion is the version key (as PodVersion gives it) of the workload's pods of its current
// template: hash is the ReplicaSet's pod-template-hash (Deployment: of its newest ReplicaSet) or
// CloneSet's status.updateRevision.
func LatestVersion(ref appsv1alpha1.TargetReference, hash string) string {
	if hash == "" {
		return ""
	}
	pod := &corev1.Pod{}
	pod.Labels = map[string]string{"pod-template-hash": hash, "controller-revision-hash": hash}
	return PodVersion(pod, ref)
}
