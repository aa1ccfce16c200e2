package v1alpha1

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// DefaultUnitedDeploymentRevisionHistoryLimit is revisionHistoryLimit when unset.
const DefaultUnitedDeploymentRevisionHistoryLimit int32 = 10

// SetDefaultsUnitedDeployment fills in what OpenKruise v1.9.0's mutating webhook defaults and
// nothing more: revisionHistoryLimit 10; updateStrategy.type Manual and, with Manual, an empty
// manualUpdate; and, when the subsets share spec.replicas by minReplicas/maxReplicas (some set
// one of them and none sets replicas), minReplicas 0 where unset. It is pure, so that both the
// webhook and a controller reading an object stored without the webhook see the same spec. It
// reports whether it changed anything.
//
// An empty scheduleStrategy.type is not defaulted (the reference does not): it means Fixed.
func SetDefaultsUnitedDeployment(ud *UnitedDeployment) bool {
	spec := &ud.Spec
	changed := false
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To(DefaultUnitedDeploymentRevisionHistoryLimit)
		changed = true
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = ManualUpdateStrategyType
		changed = true
	}
	if spec.UpdateStrategy.Type == ManualUpdateStrategyType && spec.UpdateStrategy.ManualUpdate == nil {
		spec.UpdateStrategy.ManualUpdate = &ManualUpdate{}
		changed = true
	}
	if SubsetsUseMinMax(spec.Topology.Subsets) {
		for i := range spec.Topology.Subsets {
			if s := &spec.Topology.Subsets[i]; s.MinReplicas == nil {
				s.MinReplicas = ptr.To(intstr.FromInt32(0))
				changed = true
			}
		}
	}
	return changed
}

// SubsetsUseMinMax reports whether the subsets share spec.replicas by minReplicas/maxReplicas:
// some subset sets one of them and none sets replicas (the two ways are exclusive; the
// validating webhook refuses both at once).
func SubsetsUseMinMax(subsets []Subset) bool {
	minMax := false
	for i := range subsets {
		if subsets[i].Replicas != nil {
			return false
		}
		if subsets[i].MinReplicas != nil || subsets[i].MaxReplicas != nil {
			minMax = true
		}
	}
	return minMax
}

// SubsetReplicaCount is a subset's replicas, minReplicas or maxReplicas as a count: an int as it
// is, a percentage of total rounded half up (OpenKruise's rounding). total < 0 means spec.replicas
// is unset, where a percentage means nothing. The validating webhook and the controller both
// count with it, so what is admitted is what is allocated.
func SubsetReplicaCount(total int32, v intstr.IntOrString) (int32, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("must be greater than or equal to 0")
		}
		return v.IntVal, nil
	}
	if total < 0 {
		return 0, fmt.Errorf("a percentage needs spec.replicas")
	}
	digits, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return 0, fmt.Errorf("must be a number or a percentage such as \"50%%\"")
	}
	pct, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || pct < 0 || pct > 100 {
		return 0, fmt.Errorf("must be a percentage from 0%% to 100%%")
	}
	return int32(math.Floor(float64(total)*float64(pct)/100 + 0.5)), nil
}
