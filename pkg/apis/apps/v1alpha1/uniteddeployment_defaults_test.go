package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestSetDefaultsUnitedDeployment(t *testing.T) {
	pct := intstr.FromString("50%")
	two := intstr.FromInt32(2)
	zero := intstr.FromInt32(0)
	for _, tc := range []struct {
		name        string
		in, want    UnitedDeploymentSpec
		wantChanged bool
	}{{
		name: "empty: history, Manual with empty manualUpdate; scheduleStrategy left empty (Fixed)",
		want: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: ManualUpdateStrategyType, ManualUpdate: &ManualUpdate{}}},
		wantChanged: true,
	}, {
		name: "set values kept",
		in: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](3),
			UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: ManualUpdateStrategyType, ManualUpdate: &ManualUpdate{Partitions: map[string]int32{"a": 1}}}},
		want: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](3),
			UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: ManualUpdateStrategyType, ManualUpdate: &ManualUpdate{Partitions: map[string]int32{"a": 1}}}},
	}, {
		name: "another type gets no manualUpdate",
		in:   UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](3), UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: "Other"}},
		want: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](3), UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: "Other"}},
	}, {
		name: "min/max: minReplicas 0 where unset",
		in: UnitedDeploymentSpec{Topology: Topology{Subsets: []Subset{
			{Name: "a", MaxReplicas: &two}, {Name: "b", MinReplicas: &pct}, {Name: "c"}}}},
		want: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: ManualUpdateStrategyType, ManualUpdate: &ManualUpdate{}},
			Topology: Topology{Subsets: []Subset{
				{Name: "a", MinReplicas: &zero, MaxReplicas: &two}, {Name: "b", MinReplicas: &pct}, {Name: "c", MinReplicas: &zero}}}},
		wantChanged: true,
	}, {
		name: "replicas with min/max: nothing added (the validating webhook refuses it)",
		in: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: ManualUpdateStrategyType, ManualUpdate: &ManualUpdate{}},
			Topology:       Topology{Subsets: []Subset{{Name: "a", Replicas: &two}, {Name: "b", MaxReplicas: &two}}}},
		want: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: ManualUpdateStrategyType, ManualUpdate: &ManualUpdate{}},
			Topology:       Topology{Subsets: []Subset{{Name: "a", Replicas: &two}, {Name: "b", MaxReplicas: &two}}}},
	}, {
		name: "replicas only: no minReplicas",
		in:   UnitedDeploymentSpec{Topology: Topology{Subsets: []Subset{{Name: "a", Replicas: &two}, {Name: "b"}}}},
		want: UnitedDeploymentSpec{RevisionHistoryLimit: ptr.To[int32](10),
			UpdateStrategy: UnitedDeploymentUpdateStrategy{Type: ManualUpdateStrategyType, ManualUpdate: &ManualUpdate{}},
			Topology:       Topology{Subsets: []Subset{{Name: "a", Replicas: &two}, {Name: "b"}}}},
		wantChanged: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ud := &UnitedDeployment{Spec: tc.in}
			assert.Equal(t, tc.wantChanged, SetDefaultsUnitedDeployment(ud))
			assert.Equal(t, tc.want, ud.Spec)
			assert.False(t, SetDefaultsUnitedDeployment(ud), "defaults are idempotent")
		})
	}
}
