package podorder

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NodeGetter finds a node by name. A client-go NodeLister is one.
type NodeGetter interface {
	Get(name string) (*corev1.Node, error)
}

// DeletionOrder orders pods for a scale-in, the pod to delete first first.
// The zero value orders by everything but availability and topology.
type DeletionOrder struct {
	// Now caps the times read from pods: a readiness or creation time in
	// the future (a skewed clock) counts as now.
	Now time.Time
	// Available, when set, puts the pods it rejects before the others,
	// right after the phase: CloneSet passes its minReadySeconds and
	// lifecycle-aware availability here.
	Available func(*corev1.Pod) bool
	// SpreadConstraints are the workload template's
	// topologySpreadConstraints. With Nodes set, pods in the more crowded
	// topology domains of each constraint's key go first (see rank.go);
	// without either, the rank is the same-node rank alone.
	SpreadConstraints []corev1.TopologySpreadConstraint
	// Nodes gives the labels of the nodes the pods run on. A node it
	// cannot find puts its pods in no domain.
	Nodes NodeGetter
}

// ForDeletion returns pods ordered for a scale-in, the pod to delete first
// first, with ranks counted among pods: DeletionOrder{Now: now}.Sort(pods).
func ForDeletion(pods []*corev1.Pod, now time.Time) []*corev1.Pod {
	return DeletionOrder{Now: now}.Sort(pods)
}

// Sort returns a new slice of pods in deletion order; pods is left as it
// was. Ranks count the pods given, so give all of the workload's pods that
// are candidates.
func (o DeletionOrder) Sort(pods []*corev1.Pod) []*corev1.Pod {
	facts := make([]*podFacts, len(pods))
	for i, pod := range pods {
		f := readFacts(pod)
		f.readySince = notAfter(f.readySince, o.Now)
		f.created = notAfter(f.created, o.Now)
		f.deletionCost = deletionCost(pod)
		if o.Available != nil {
			f.unavailable = !o.Available(pod)
		}
		facts[i] = &f
	}
	rankByNode(facts)
	if len(o.SpreadConstraints) > 0 && o.Nodes != nil {
		rankBySpread(facts, o.SpreadConstraints, o.Nodes)
	}
	slices.SortStableFunc(facts, compareForDeletion)
	out := make([]*corev1.Pod, len(facts))
	for i, f := range facts {
		out[i] = f.pod
	}
	return out
}

// compareForDeletion is the whole deletion order (the package comment
// lists it).
func compareForDeletion(a, b *podFacts) int {
	return cmp.Or(
		compareBeforeRank(a, b),
		cmp.Compare(b.spreadRank, a.spreadRank),
		cmp.Compare(b.nodeRank, a.nodeRank),
		compareAge(a, b),
	)
}

// compareBeforeRank is the deletion order up to the ranks.
func compareBeforeRank(a, b *podFacts) int {
	return cmp.Or(
		compareScheduling(a, b),
		trueFirst(a.unavailable, b.unavailable),
		trueFirst(!a.ready, !b.ready),
		cmp.Compare(a.deletionCost, b.deletionCost),
	)
}

// notAfter caps t at now; a zero now caps nothing.
func notAfter(t, now time.Time) time.Time {
	if !now.IsZero() && t.After(now) {
		return now
	}
	return t
}
