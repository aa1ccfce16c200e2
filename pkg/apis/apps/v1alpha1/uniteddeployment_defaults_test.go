package v1alpha1

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestSubsetReplicaCount(t *testing.T) {
	for _, tc := range []struct {
		total int32
		v     string
		want  int32
		err   bool
	}{
		{10, "3", 3, false},
		{10, "25%", 3, false}, // 2.5 rounds half up
		{10, "24%", 2, false},
		{7, "50%", 4, false}, // 3.5
		{5, "10%", 1, false}, // 0.5
		{5, "9%", 0, false},  // 0.45
		{10, "100%", 10, false},
		{10, "0%", 0, false},
		{10, "101%", 0, true},
		{10, "-1%", 0, true},
		{10, "x%", 0, true},
		{10, "5x", 0, true},
		{-1, "50%", 0, true}, // no spec.replicas
		{-1, "4", 4, false},
		{math.MaxInt32, "100%", math.MaxInt32, false},
	} {
		got, err := SubsetReplicaCount(tc.total, intstr.Parse(tc.v))
		if tc.err {
			assert.Error(t, err, "%d %s", tc.total, tc.v)
			continue
		}
		require.NoError(t, err, "%d %s", tc.total, tc.v)
		assert.Equal(t, tc.want, got, "%d %s", tc.total, tc.v)
	}
	_, err := SubsetReplicaCount(10, intstr.FromInt32(-1))
	assert.Error(t, err)
}
