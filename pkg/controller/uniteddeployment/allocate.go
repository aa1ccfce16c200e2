package uniteddeployment

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// observed is what allocation reads of a subset's existing workload.
type observed struct {
	// replicas is the workload's spec.replicas.
	replicas int32
	// ready is its Ready pods.
	ready int32
	// unschedulable: Adaptive found its pods stuck unscheduled (see adaptive.go).
	unschedulable bool
	// marked: its Schedulable condition was False before this reconcile (reserve mode).
	marked bool
	// reserved counts its pods kept as reserved (reserveUnschedulablePods).
	reserved int32
	// timeouts counts the reserved pods of an older revision whose update timed out.
	timeouts int32
}

// allocate gives each subset of ud its replicas, given the subsets' existing workloads (absent
// ones are new). The mode is the reference's: reserve (Adaptive with reserveUnschedulablePods),
// Adaptive, min/max (some subset sets minReplicas or maxReplicas), or specific. The work is
// linear in the number of subsets whatever the replicas say.
func allocate(ud *appsv1alpha1.UnitedDeployment, existing map[string]observed) (map[string]int32, error) {
	strategy := &ud.Spec.Topology.ScheduleStrategy
	switch {
	case strategy.ShouldReserveUnschedulablePods():
		return allocateReserving(ud, existing)
	case strategy.IsAdaptive():
		return allocateAdaptive(ud, existing)
	}
	for _, s := range ud.Spec.Topology.Subsets {
		if s.MinReplicas != nil || s.MaxReplicas != nil {
			return allocateMinMax(ud)
		}
	}
	return allocateSpecific(ud, existing)
}

// allocateSpecific gives subsets with explicit replicas theirs and spreads the rest evenly over
// the others; the units left over go to the subsets with the most replicas now (ties by name,
// last first), so a scale moves as few pods as it can.
func allocateSpecific(ud *appsv1alpha1.UnitedDeployment, existing map[string]observed) (map[string]int32, error) {
	total := int32(-1)
	if ud.Spec.Replicas != nil {
		total = *ud.Spec.Replicas
	}
	subsets := ud.Spec.Topology.Subsets
	out := make(map[string]int32, len(subsets))
	var specified int32
	var rest []string
	for _, s := range subsets {
		if s.Replicas == nil {
			rest = append(rest, s.Name)
			continue
		}
		n, err := appsv1alpha1.SubsetReplicaCount(total, *s.Replicas)
		if err != nil {
			// As the reference: an unparsable subset shares the rest.
			rest = append(rest, s.Name)
			continue
		}
		out[s.Name] = n
		specified += n
	}
	switch {
	case total < 0 && len(rest) > 0:
		return nil, fmt.Errorf("spec.replicas is unset, so every subset must set its replicas")
	case total >= 0 && specified > total:
		return nil, fmt.Errorf("the subsets' replicas (%d) exceed spec.replicas (%d)", specified, total)
	case total >= 0 && specified < total && len(rest) == 0:
		return nil, fmt.Errorf("the subsets' replicas (%d) fall short of spec.replicas (%d)", specified, total)
	}
	if len(rest) == 0 {
		return out, nil
	}
	// Most current replicas first; equal counts by name, the greater first (the reference walks
	// its ascending order backwards).
	slices.SortFunc(rest, func(a, b string) int {
		if c := cmp.Compare(existing[b].replicas, existing[a].replicas); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	left := total - specified
	average, extra := left/int32(len(rest)), left%int32(len(rest))
	for _, name := range rest {
		out[name] = average
		if extra > 0 {
			out[name]++
			extra--
		}
	}
	return out, nil
}

// bounds are each subset's minReplicas and maxReplicas as counts (0 and unlimited when unset).
func bounds(total int32, subsets []appsv1alpha1.Subset) (lo, hi map[string]int32, err error) {
	lo, hi = make(map[string]int32, len(subsets)), make(map[string]int32, len(subsets))
	for i, s := range subsets {
		minR, maxR := int32(0), int32(math.MaxInt32)
		if s.MinReplicas != nil {
			minR, _ = appsv1alpha1.SubsetReplicaCount(total, *s.MinReplicas)
		}
		if s.MaxReplicas != nil {
			maxR, _ = appsv1alpha1.SubsetReplicaCount(total, *s.MaxReplicas)
		}
		if minR > maxR {
			return nil, nil, fmt.Errorf("subsets[%d].maxReplicas (%d) is less than its minReplicas (%d)", i, maxR, minR)
		}
		lo[s.Name], hi[s.Name] = minR, maxR
	}
	return lo, hi, nil
}

func specTotal(ud *appsv1alpha1.UnitedDeployment) int32 {
	if ud.Spec.Replicas == nil {
		return 0
	}
	return *ud.Spec.Replicas
}

// allocateMinMax gives each subset, in order, its minimum, then fills them, in order, to their
// maximum until spec.replicas is spent.
func allocateMinMax(ud *appsv1alpha1.UnitedDeployment) (map[string]int32, error) {
	total := specTotal(ud)
	lo, hi, err := bounds(total, ud.Spec.Topology.Subsets)
	if err != nil {
		return nil, err
	}
	return fillMinMax(total, lo, hi, ud.Spec.Topology.Subsets), nil
}

func fillMinMax(total int32, lo, hi map[string]int32, subsets []appsv1alpha1.Subset) map[string]int32 {
	out := make(map[string]int32, len(subsets))
	var given int32
	for _, s := range subsets {
		add := max(min(lo[s.Name], total-given), 0)
		out[s.Name] = add
		given += add
	}
	for _, s := range subsets {
		if given >= total {
			break
		}
		add := max(min(hi[s.Name]-lo[s.Name], total-given), 0)
		out[s.Name] += add
		given += add
	}
	return out
}

// allocateAdaptive is min/max where an unschedulable subset keeps only its Ready pods (bounded
// by its min and max) and a schedulable one never loses Ready pods to a later subset.
func allocateAdaptive(ud *appsv1alpha1.UnitedDeployment, existing map[string]observed) (map[string]int32, error) {
	total := specTotal(ud)
	lo, hi, err := bounds(total, ud.Spec.Topology.Subsets)
	if err != nil {
		return nil, err
	}
	for _, s := range ud.Spec.Topology.Subsets {
		o, ok := existing[s.Name]
		minR, maxR := lo[s.Name], hi[s.Name]
		if ok && o.unschedulable {
			minR, maxR = max(o.ready, minR), min(o.ready, maxR)
		}
		if !o.unschedulable && o.ready > minR {
			minR = min(o.ready, maxR)
		}
		lo[s.Name], hi[s.Name] = minR, maxR
	}
	return fillMinMax(total, lo, hi, ud.Spec.Topology.Subsets), nil
}

// allocateReserving is Adaptive with reserved pods: an unschedulable subset keeps its replicas
// (its pending pods stay, labelled reserved) but only replicas minus reserved of them count
// toward spec.replicas, so the shortfall is created in the next subsets.
func allocateReserving(ud *appsv1alpha1.UnitedDeployment, existing map[string]observed) (map[string]int32, error) {
	total := specTotal(ud)
	lo, hi, err := bounds(total, ud.Spec.Topology.Subsets)
	if err != nil {
		return nil, err
	}
	type record struct{ allocated, capacity int32 }
	records := make(map[string]*record, len(ud.Spec.Topology.Subsets))
	for _, s := range ud.Spec.Topology.Subsets {
		r := &record{capacity: math.MaxInt32}
		if o, ok := existing[s.Name]; ok && (o.unschedulable || o.marked) {
			r.capacity = o.replicas - o.reserved
		}
		records[s.Name] = r
	}
	// give raises a subset toward to and returns how many of the raise count (those beyond its
	// capacity are reserved stand-ins, not counted).
	give := func(r *record, to, left int32) int32 {
		add := max(min(to-r.allocated, left), 0)
		r.allocated += add
		counted := min(add, max(r.capacity, 0))
		r.capacity -= add
		return counted
	}
	left := total
	for _, s := range ud.Spec.Topology.Subsets {
		if left <= 0 {
			break
		}
		left -= give(records[s.Name], lo[s.Name], left)
	}
	for _, s := range ud.Spec.Topology.Subsets {
		if left <= 0 {
			break
		}
		to := hi[s.Name]
		if o, ok := existing[s.Name]; ok && o.unschedulable {
			to = o.replicas
		}
		left -= give(records[s.Name], to, left)
	}
	out := make(map[string]int32, len(records))
	for name, r := range records {
		out[name] = r.allocated
	}
	return out, nil
}
