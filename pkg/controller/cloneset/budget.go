package cloneset

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/workload/partition"
)

// Budget is a CloneSet's strategy resolved to pod counts for its current replicas.
type Budget struct {
	// Replicas wanted.
	Replicas int
	// Partition: pods kept at the current (old) revision.
	Partition int
	// MaxSurge: pods allowed above Replicas while pods are recreated.
	MaxSurge int
	// MaxUnavailable: pods allowed unavailable while updating or deleting.
	MaxUnavailable int
	// ScaleMaxUnavailable: pods allowed unavailable while scaling out (creation stops there).
	ScaleMaxUnavailable int
	// ExcludePreparingDelete: pods waiting on a preDelete hook do not count towards Replicas.
	ExcludePreparingDelete bool
	// Rollback: updated pods beyond Replicas-Partition go back to the current revision (gate
	// CloneSetPartitionRollback, and only while the current and update revisions differ).
	Rollback bool
}

// Strategy is what a CloneSet asks, in the API's terms; nil values take the defaults.
type Strategy struct {
	Replicas               int32
	Partition              *intstr.IntOrString
	MaxSurge               *intstr.IntOrString
	MaxUnavailable         *intstr.IntOrString
	ScaleMaxUnavailable    *intstr.IntOrString
	Paused                 bool
	ExcludePreparingDelete bool
}

// DefaultMaxUnavailable is the reference's default updateStrategy.maxUnavailable.
var DefaultMaxUnavailable = intstr.FromString("20%")

// Resolve turns percentages into counts of s.Replicas the way OpenKruise does, so that a
// manifest behaves the same: partition rounds up but, below 100%, keeps at most replicas-1 pods
// (pkg/workload/partition); maxSurge rounds up; maxUnavailable rounds up, or down when there is a surge. Two differences, both to keep a rollout from stalling: maxSurge is 0
// while paused (as the reference) and, as the built-in Deployment, when both maxSurge and
// maxUnavailable come to 0, maxUnavailable is 1.
func Resolve(s Strategy) (Budget, error) {
	b := Budget{Replicas: int(s.Replicas), ExcludePreparingDelete: s.ExcludePreparingDelete}
	var err error
	if b.Partition, err = partition.Count(s.Partition, b.Replicas); err != nil {
		return Budget{}, fmt.Errorf("partition %q: %w", s.Partition.String(), err)
	}
	if b.MaxSurge, err = scaled("maxSurge", s.MaxSurge, b.Replicas, true, 0); err != nil {
		return Budget{}, err
	}
	if s.Paused {
		b.MaxSurge = 0
	}
	mu := s.MaxUnavailable
	if mu == nil {
		mu = &DefaultMaxUnavailable
	}
	if b.MaxUnavailable, err = scaled("maxUnavailable", mu, b.Replicas, b.MaxSurge == 0, 0); err != nil {
		return Budget{}, err
	}
	if b.MaxSurge == 0 && b.MaxUnavailable == 0 {
		b.MaxUnavailable = 1
	}
	if b.ScaleMaxUnavailable, err = scaled("scaleStrategy.maxUnavailable", s.ScaleMaxUnavailable, b.Replicas, true, math.MaxInt32); err != nil {
		return Budget{}, err
	}
	return b, nil
}

// scaled is v as a count of total: an int as is, a percentage of total rounded as asked.
func scaled(field string, v *intstr.IntOrString, total int, roundUp bool, unset int) (int, error) {
	if v == nil {
		return unset, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, roundUp)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", field, v.String(), err)
	}
	if n < 0 {
		return 0, fmt.Errorf("%s %q is negative", field, v.String())
	}
	return n, nil
}
