package spread

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// How long the ledger keeps an admission's mark (OpenKruise's timeouts): a pod admitted into a
// subset is counted there for CreatingTimeout until the controller sees it, and a pod whose
// deletion was admitted is no longer counted for DeletingTimeout unless it is gone or terminating
// by then.
const (
	CreatingTimeout = 30 * time.Second
	DeletingTimeout = 15 * time.Second
)

// NoSubset is the Groups key of the pods that are in no subset: not annotated for this
// WorkloadSpread (and not adopted), or annotated for a subset that no longer exists.
const NoSubset = ""

// Groups are a WorkloadSpread's pods by version (PodVersion), then by subset name (NoSubset for
// the pods in none).
type Groups map[string]map[string][]*corev1.Pod

// Active reports whether pod counts: neither terminating nor finished (the built-in controllers'
// notion of an active pod).
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// SubsetOf is the subset of ws that pod is annotated for, NoSubset when the annotation is
// missing, names another WorkloadSpread or a subset ws no longer has (renamed or removed).
func SubsetOf(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod) string {
	m, ok := Matched(pod)
	if !ok || m.Name != ws.Name || m.Subset == "" {
		return NoSubset
	}
	for i := range ws.Spec.Subsets {
		if ws.Spec.Subsets[i].Name == m.Subset {
			return m.Subset
		}
	}
	return NoSubset
}

// Group sorts the workload's pods by version and subset. adopted places pods the annotation does
// not (by UID, see Adopt) until their patch is seen.
func Group(ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod, adopted map[types.UID]string) Groups {
	g := Groups{}
	ref := targetRef(ws)
	for _, pod := range pods {
		v := PodVersion(pod, ref)
		subset := SubsetOf(ws, pod)
		if s, ok := adopted[pod.UID]; ok && subset == NoSubset {
			subset = s
		}
		if g[v] == nil {
			g[v] = map[string][]*corev1.Pod{}
		}
		g[v][subset] = append(g[v][subset], pod)
	}
	return g
}

func targetRef(ws *appsv1alpha1.WorkloadSpread) appsv1alpha1.TargetReference {
	if ws.Spec.TargetReference == nil {
		return appsv1alpha1.TargetReference{}
	}
	return *ws.Spec.TargetReference
}

// Mark is an admission's mark the ledger dropped because its time ran out: a pod recorded as
// being created that was never seen, or one recorded as being deleted that is still there.
type Mark struct {
	Subset, Pod string
	Deleting    bool
}

// StatusResult is what ComputeStatus decided.
type StatusResult struct {
	Status appsv1alpha1.WorkloadSpreadStatus
	// Reschedule are the pods the Adaptive strategy deletes, so that the workload recreates them
	// where there is room: pending and unschedulable in a subset that is not the last one for
	// longer than rescheduleCriticalSeconds.
	Reschedule []*corev1.Pod
	// Expired are the creatingPods and deletingPods entries dropped at their timeout.
	Expired []Mark
	// Recovered are the subsets whose Schedulable condition turned True again.
	Recovered []string
	// Requeue is when something pending expires (a ledger entry, an Adaptive timeout), 0: never.
	Requeue time.Duration
}

// ComputeStatus recomputes ws's status from the pods the controller observes, grouped by Group,
// at time now for a workload of replicas: each subset's active pods (in spec order, entries
// matched by name, so renamed, reordered and removed subsets carry nothing over), the admission
// ledger pruned of what has been observed or has expired, missingReplicas from both, the
// Adaptive strategy's Schedulable conditions and the per-version counts (a version whose pods
// and marks are all gone is dropped).
func ComputeStatus(ws *appsv1alpha1.WorkloadSpread, groups Groups, replicas int32, now time.Time) (StatusResult, error) {
	var res StatusResult
	seen := observedKeys(groups)
	all := map[string][]*corev1.Pod{}
	for _, v := range slices.Sorted(maps.Keys(groups)) {
		for s, pods := range groups[v] {
			all[s] = append(all[s], pods...)
		}
	}
	top, err := subsetStatuses(ws, ws.Status.SubsetStatuses, all, seen, replicas, now, &res, true)
	if err != nil {
		return StatusResult{}, err
	}
	st := appsv1alpha1.WorkloadSpreadStatus{ObservedGeneration: ws.Generation, SubsetStatuses: top}
	versions := map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{}
	for v := range groups {
		ss, err := subsetStatuses(ws, ws.Status.VersionedSubsetStatuses[v], groups[v], seen, replicas, now, &res, false)
		if err != nil {
			return StatusResult{}, err
		}
		versions[v] = ss
	}
	for v, old := range ws.Status.VersionedSubsetStatuses {
		if _, ok := groups[v]; ok {
			continue
		}
		ss, err := subsetStatuses(ws, old, nil, seen, replicas, now, &res, false)
		if err != nil {
			return StatusResult{}, err
		}
		if !emptyStatuses(ss) {
			versions[v] = ss
		}
	}
	if len(versions) > 0 {
		st.VersionedSubsetStatuses = versions
	}
	res.Status = st
	return res, nil
}

// observedKeys are the ledger keys of every pod seen: its name, and the key it was admitted under
// when it had no name then.
func observedKeys(groups Groups) map[string]bool {
	seen := map[string]bool{}
	for _, bySubset := range groups {
		for _, pods := range bySubset {
			for _, p := range pods {
				seen[p.Name] = true
				if m, ok := Matched(p); ok && m.UID != "" {
					seen[m.UID] = true
				}
			}
		}
	}
	return seen
}

// emptyStatuses says whether statuses count no pod and hold no mark.
func emptyStatuses(ss []appsv1alpha1.WorkloadSpreadSubsetStatus) bool {
	for _, s := range ss {
		if s.Replicas != 0 || len(s.CreatingPods) != 0 || len(s.DeletingPods) != 0 {
			return false
		}
	}
	return true
}

// subsetStatuses computes one list of subset statuses (the whole workload's, or one version's)
// from the previous one. top says it is the whole workload's: only its Adaptive decisions and
// expired marks are reported (a version's are a part of them).
func subsetStatuses(ws *appsv1alpha1.WorkloadSpread, old []appsv1alpha1.WorkloadSpreadSubsetStatus, pods map[string][]*corev1.Pod,
	seen map[string]bool, replicas int32, now time.Time, res *StatusResult, top bool) ([]appsv1alpha1.WorkloadSpreadSubsetStatus, error) {
	prev := make(map[string]*appsv1alpha1.WorkloadSpreadSubsetStatus, len(old))
	for i := range old {
		prev[old[i].Name] = &old[i]
	}
	critical := rescheduleCritical(ws)
	out := make([]appsv1alpha1.WorkloadSpreadSubsetStatus, len(ws.Spec.Subsets))
	for i := range ws.Spec.Subsets {
		subset := &ws.Spec.Subsets[i]
		limit, unlimited, err := MaxReplicas(subset, replicas)
		if err != nil {
			return nil, err
		}
		st, expired, next := count(subset.Name, pods[subset.Name], prev[subset.Name], seen, now)
		st.MissingReplicas = missing(limit, unlimited, st)
		res.Requeue = sooner(res.Requeue, next)
		if top {
			res.Expired = append(res.Expired, expired...)
		}
		if critical > 0 {
			last := i == len(ws.Spec.Subsets)-1
			failed, next := stuckPods(pods[subset.Name], critical, now)
			res.Requeue = sooner(res.Requeue, next)
			if last {
				failed = nil
			}
			cond, recovered, next := schedulableCondition(oldCondition(prev[subset.Name]), last, len(failed) > 0, now)
			res.Requeue = sooner(res.Requeue, next)
			st.Conditions = []appsv1alpha1.WorkloadSpreadSubsetCondition{cond}
			if top {
				res.Reschedule = append(res.Reschedule, failed...)
				if recovered {
					res.Recovered = append(res.Recovered, subset.Name)
				}
			}
		}
		out[i] = st
	}
	return out, nil
}

// count is one subset's active pods and its ledger entries that still stand, with the entries
// dropped at their timeout and when the next one expires.
func count(name string, pods []*corev1.Pod, old *appsv1alpha1.WorkloadSpreadSubsetStatus, seen map[string]bool, now time.Time) (
	appsv1alpha1.WorkloadSpreadSubsetStatus, []Mark, time.Duration) {
	st := appsv1alpha1.WorkloadSpreadSubsetStatus{Name: name}
	var expired []Mark
	var next time.Duration
	live := map[string]bool{}
	for _, p := range pods {
		if Active(p) {
			st.Replicas++
			live[p.Name] = true
		}
	}
	if old == nil {
		return st, nil, 0
	}
	for key, at := range old.CreatingPods {
		if seen[key] {
			continue
		}
		left := at.Add(CreatingTimeout).Sub(now)
		if left <= 0 {
			expired = append(expired, Mark{Subset: name, Pod: key})
			continue
		}
		st.CreatingPods = setTime(st.CreatingPods, key, at)
		next = sooner(next, left)
	}
	for key, at := range old.DeletingPods {
		// A pod gone or terminating has been deleted: its replica is no longer counted anyway.
		if !live[key] {
			continue
		}
		left := at.Add(DeletingTimeout).Sub(now)
		if left <= 0 {
			expired = append(expired, Mark{Subset: name, Pod: key, Deleting: true})
			continue
		}
		st.DeletingPods = setTime(st.DeletingPods, key, at)
		next = sooner(next, left)
	}
	slices.SortFunc(expired, func(a, b Mark) int { return strings.Compare(a.Pod, b.Pod) })
	return st, expired, next
}

func setTime(m map[string]metav1.Time, k string, t metav1.Time) map[string]metav1.Time {
	if m == nil {
		m = map[string]metav1.Time{}
	}
	m[k] = t
	return m
}

// missing is how many more pods the subset takes: its maximum less its active pods and the pods
// being created, plus those being deleted, within [0, max]; -1 without a maximum.
func missing(limit int32, unlimited bool, st appsv1alpha1.WorkloadSpreadSubsetStatus) int32 {
	if unlimited {
		return -1
	}
	m := int64(limit) - int64(st.Replicas) - int64(len(st.CreatingPods)) + int64(len(st.DeletingPods))
	return int32(min(max(m, 0), int64(limit)))
}

// sooner is the earlier of two delays, 0 meaning none.
func sooner(a, b time.Duration) time.Duration {
	if b <= 0 {
		return a
	}
	if a <= 0 || b < a {
		return b
	}
	return a
}

// String is a short account of the subsets' counts for logs.
func String(ss []appsv1alpha1.WorkloadSpreadSubsetStatus) string {
	out := ""
	for _, s := range ss {
		out += fmt.Sprintf("%s=%d/%d(+%d,-%d) ", s.Name, s.Replicas, s.MissingReplicas, len(s.CreatingPods), len(s.DeletingPods))
	}
	return out
}
