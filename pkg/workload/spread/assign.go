package spread

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Placement is Assign's decision for a pod being created.
type Placement struct {
	// Subset is the subset the pod goes to; nil only when the WorkloadSpread has no subsets.
	Subset *appsv1alpha1.WorkloadSpreadSubset
	// Key is the creatingPods key generated for a pod without a name, for the annotation's uid;
	// empty when the pod has a name or nothing was recorded.
	Key string
	// StatusChanged is true when Assign changed ws.Status, which the caller must then write.
	StatusChanged bool
	// Overflow is true when no schedulable subset had room and the pod went to the least filled one.
	Overflow bool
}

// Assign chooses the subset of a pod being created and records it in ws.Status, which the caller
// passes as a copy and writes when StatusChanged (on the resourceVersion it read, so that
// concurrent admissions never both take a subset's last place). total is the workload's replicas
// (for percentages); newKey makes a creatingPods key for a pod without a name.
//
// The rules are OpenKruise's: a single subset without maxReplicas and StatefulSet pods (placed by
// ordinal over cumulative maxReplicas) need no status write; otherwise the pod version's subset
// list (initialised from maxReplicas when the version is new, so a surge's new pods are spread like
// the old ones) gives the first schedulable subset with room, which records the pod in creatingPods
// and loses one missingReplicas. Unlike OpenKruise, a pod for which no schedulable subset has room
// is not admitted bare (#2129): it goes to the schedulable subset filled least (ties to the
// earlier), and the controller's deletion cost marks it surplus.
func Assign(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod, total int32, now time.Time, newKey func() string) (Placement, error) {
	subsets := ws.Spec.Subsets
	if len(subsets) == 0 || ws.Spec.TargetReference == nil {
		return Placement{}, nil
	}
	if len(subsets) == 1 && subsets[0].MaxReplicas == nil {
		return Placement{Subset: &subsets[0]}, nil
	}
	if ws.Spec.TargetReference.Kind == "StatefulSet" {
		s, err := byOrdinal(ws, pod, total)
		return Placement{Subset: s}, err
	}

	version := PodVersion(pod, *ws.Spec.TargetReference)
	list, err := versionList(ws, version, total)
	if err != nil {
		return Placement{}, err
	}
	if pod.Name != "" {
		// A retried admission of a pod already recorded keeps its subset.
		for i := range list {
			_, creating := list[i].CreatingPods[pod.Name]
			_, deleting := list[i].DeletingPods[pod.Name]
			if s := specSubset(ws, list[i].Name); (creating || deleting) && s != nil {
				return Placement{Subset: s}, nil
			}
		}
	}

	entries := make([]*appsv1alpha1.WorkloadSpreadSubsetStatus, len(subsets))
	for i := range subsets {
		entries[i] = entryOf(list, subsets[i].Name)
		// The room is recounted from maxReplicas at the workload's replicas now: the stored
		// missingReplicas was computed for the replicas of the last reconcile, and a workload
		// that just scaled creates its pods before the controller has seen the new count.
		limit, unlimited, err := MaxReplicas(&subsets[i], total)
		if err != nil {
			return Placement{}, err
		}
		entries[i].MissingReplicas = missing(limit, unlimited, *entries[i])
	}
	chosen, overflow := -1, false
	for i := range subsets {
		if !schedulable(ws, entries[i]) {
			continue
		}
		if m := entries[i].MissingReplicas; m > 0 || m == -1 {
			chosen = i
			break
		}
	}
	if chosen < 0 {
		if chosen, err = leastFilled(ws, entries, total); err != nil {
			return Placement{}, err
		}
		overflow = true
	}
	e := entries[chosen]
	p := Placement{Subset: &subsets[chosen], Overflow: overflow}
	if e.MissingReplicas == -1 {
		return p, nil
	}
	key := pod.Name
	if key == "" {
		key = newKey()
		p.Key = key
	}
	if e.CreatingPods == nil {
		e.CreatingPods = map[string]metav1.Time{}
	}
	e.CreatingPods[key] = metav1.NewTime(now)
	if e.MissingReplicas > 0 {
		e.MissingReplicas--
	}
	p.StatusChanged = true
	return p, nil
}

// versionList returns the stored subset list of version, with an entry (initialised from
// maxReplicas) appended for every spec subset it lacks; entries are matched by name, so subsets
// reordered or removed in the spec keep their counts. The list is stored back into ws.Status.
func versionList(ws *appsv1alpha1.WorkloadSpread, version string, total int32) ([]appsv1alpha1.WorkloadSpreadSubsetStatus, error) {
	list := ws.Status.VersionedSubsetStatuses[version]
	before := len(list)
	for i := range ws.Spec.Subsets {
		s := &ws.Spec.Subsets[i]
		if entryOf(list, s.Name) != nil {
			continue
		}
		max, unlimited, err := MaxReplicas(s, total)
		if err != nil {
			return nil, err
		}
		e := appsv1alpha1.WorkloadSpreadSubsetStatus{Name: s.Name, MissingReplicas: max}
		if unlimited {
			e.MissingReplicas = -1
		}
		list = append(list, e)
	}
	if len(list) != before || ws.Status.VersionedSubsetStatuses == nil {
		if ws.Status.VersionedSubsetStatuses == nil {
			ws.Status.VersionedSubsetStatuses = map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{}
		}
		ws.Status.VersionedSubsetStatuses[version] = list
	}
	return list, nil
}

func entryOf(list []appsv1alpha1.WorkloadSpreadSubsetStatus, name string) *appsv1alpha1.WorkloadSpreadSubsetStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func specSubset(ws *appsv1alpha1.WorkloadSpread, name string) *appsv1alpha1.WorkloadSpreadSubset {
	for i := range ws.Spec.Subsets {
		if ws.Spec.Subsets[i].Name == name {
			return &ws.Spec.Subsets[i]
		}
	}
	return nil
}

// schedulable is false when the Adaptive strategy marked the subset Schedulable=False, in the
// versioned entry or in the overall subsetStatuses.
func schedulable(ws *appsv1alpha1.WorkloadSpread, e *appsv1alpha1.WorkloadSpreadSubsetStatus) bool {
	if e == nil {
		return true
	}
	if unschedulable(e.Conditions) {
		return false
	}
	if o := entryOf(ws.Status.SubsetStatuses, e.Name); o != nil && unschedulable(o.Conditions) {
		return false
	}
	return true
}

func unschedulable(conds []appsv1alpha1.WorkloadSpreadSubsetCondition) bool {
	for _, c := range conds {
		if c.Type == appsv1alpha1.SubsetSchedulable && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// leastFilled is the schedulable subset (any subset when none is) whose pods (replicas plus those
// being created) over its maxReplicas is lowest, ties to the earlier; a subset of size 0 is fuller
// than any other.
func leastFilled(ws *appsv1alpha1.WorkloadSpread, entries []*appsv1alpha1.WorkloadSpreadSubsetStatus, total int32) (int, error) {
	candidates := make([]int, 0, len(entries))
	for i := range entries {
		if schedulable(ws, entries[i]) {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		for i := range entries {
			candidates = append(candidates, i)
		}
	}
	best, bestFill := -1, math.Inf(1)
	for _, i := range candidates {
		max, _, err := MaxReplicas(&ws.Spec.Subsets[i], total)
		if err != nil {
			return 0, err
		}
		fill := math.Inf(1)
		if max > 0 {
			fill = float64(entries[i].Replicas+int32(len(entries[i].CreatingPods))-int32(len(entries[i].DeletingPods))) / float64(max)
		}
		if best < 0 || fill < bestFill {
			best, bestFill = i, fill
		}
	}
	return best, nil
}

// byOrdinal places a StatefulSet pod by its ordinal: the first subsets' maxReplicas, added up
// (unschedulable subsets skipped), are ordinal ranges. An ordinal beyond them all, or a pod name
// without one, goes to the last schedulable subset.
func byOrdinal(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod, total int32) (*appsv1alpha1.WorkloadSpreadSubset, error) {
	ordinal, ok := ordinalOf(pod.Name)
	var threshold int64
	last := -1
	for i := range ws.Spec.Subsets {
		s := &ws.Spec.Subsets[i]
		if !schedulable(ws, entryOf(ws.Status.SubsetStatuses, s.Name)) {
			continue
		}
		last = i
		max, unlimited, err := MaxReplicas(s, total)
		if err != nil {
			return nil, err
		}
		if unlimited {
			threshold = math.MaxInt64
		} else {
			threshold += int64(max)
		}
		if ok && int64(ordinal) < threshold {
			return s, nil
		}
	}
	if last < 0 {
		last = len(ws.Spec.Subsets) - 1
	}
	return &ws.Spec.Subsets[last], nil
}

func ordinalOf(name string) (int, bool) {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Subset returns the spec subset named name, or an error naming the WorkloadSpread.
func Subset(ws *appsv1alpha1.WorkloadSpread, name string) (*appsv1alpha1.WorkloadSpreadSubset, error) {
	if s := specSubset(ws, name); s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("WorkloadSpread %s/%s has no subset %q", ws.Namespace, ws.Name, name)
}

// Release records the admitted deletion (or eviction) of a pod the annotation m placed in a
// subset: the pod goes into the subset's deletingPods and the subset gains one missingReplicas,
// so that its replacement is admitted there before the controller sees the pod gone. It reports
// whether ws.Status changed. A pod already recorded, a version or subset without an entry and an
// unlimited subset change nothing: the controller recounts them.
func Release(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod, m *appsv1alpha1.InjectWorkloadSpread, now time.Time) bool {
	if ws.Spec.TargetReference == nil || pod.Name == "" {
		return false
	}
	list := ws.Status.VersionedSubsetStatuses[PodVersion(pod, *ws.Spec.TargetReference)]
	for i := range list {
		_, creating := list[i].CreatingPods[pod.Name]
		_, deleting := list[i].DeletingPods[pod.Name]
		if creating || deleting {
			return false
		}
	}
	e := entryOf(list, m.Subset)
	if e == nil || e.MissingReplicas < 0 {
		return false
	}
	if e.DeletingPods == nil {
		e.DeletingPods = map[string]metav1.Time{}
	}
	e.DeletingPods[pod.Name] = metav1.NewTime(now)
	e.MissingReplicas++
	return true
}
