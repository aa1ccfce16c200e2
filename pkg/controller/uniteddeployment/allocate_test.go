package uniteddeployment

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// sub is a subset with replicas, minReplicas and maxReplicas given as strings ("" unset).
func sub(name, replicas, minR, maxR string) appsv1alpha1.Subset {
	s := appsv1alpha1.Subset{Name: name}
	parse := func(v string) *intstr.IntOrString {
		if v == "" {
			return nil
		}
		x := intstr.Parse(v)
		return &x
	}
	s.Replicas, s.MinReplicas, s.MaxReplicas = parse(replicas), parse(minR), parse(maxR)
	return s
}

func udWith(total *int32, subsets ...appsv1alpha1.Subset) *appsv1alpha1.UnitedDeployment {
	return &appsv1alpha1.UnitedDeployment{Spec: appsv1alpha1.UnitedDeploymentSpec{Replicas: total,
		Topology: appsv1alpha1.Topology{Subsets: subsets}}}
}

func TestAllocateSpecific(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ud       *appsv1alpha1.UnitedDeployment
		existing map[string]observed
		want     map[string]int32
		err      bool
	}{
		{name: "even", ud: udWith(ptr.To[int32](9), sub("a", "", "", ""), sub("b", "", "", ""), sub("c", "", "", "")),
			want: map[string]int32{"a": 3, "b": 3, "c": 3}},
		{name: "the extra units go to the subsets with most replicas now", ud: udWith(ptr.To[int32](5), sub("a", "", "", ""), sub("b", "", "", ""), sub("c", "", "", "")),
			existing: map[string]observed{"a": {replicas: 1}, "b": {replicas: 3}, "c": {replicas: 2}},
			want:     map[string]int32{"a": 1, "b": 2, "c": 2}},
		{name: "ties by name, greater first", ud: udWith(ptr.To[int32](4), sub("a", "", "", ""), sub("b", "", "", ""), sub("c", "", "", "")),
			want: map[string]int32{"a": 1, "b": 1, "c": 2}},
		{name: "explicit first, percentages rounded half up", ud: udWith(ptr.To[int32](10), sub("a", "25%", "", ""), sub("b", "2", "", ""), sub("c", "", "", "")),
			want: map[string]int32{"a": 3, "b": 2, "c": 5}},
		{name: "all explicit equal to the total", ud: udWith(ptr.To[int32](6), sub("a", "50%", "", ""), sub("b", "3", "", "")),
			want: map[string]int32{"a": 3, "b": 3}},
		{name: "all explicit short of the total", ud: udWith(ptr.To[int32](7), sub("a", "3", "", ""), sub("b", "3", "", "")), err: true},
		{name: "explicit over the total", ud: udWith(ptr.To[int32](4), sub("a", "3", "", ""), sub("b", "3", "", ""), sub("c", "", "", "")), err: true},
		{name: "no total: every subset says its own", ud: udWith(nil, sub("a", "3", "", ""), sub("b", "1", "", "")),
			want: map[string]int32{"a": 3, "b": 1}},
		{name: "no total and a subset without replicas", ud: udWith(nil, sub("a", "3", "", ""), sub("b", "", "", "")), err: true},
		{name: "huge totals are arithmetic, not work", ud: udWith(ptr.To[int32](math.MaxInt32), sub("a", "", "", ""), sub("b", "", "", "")),
			want: map[string]int32{"a": math.MaxInt32 / 2, "b": math.MaxInt32/2 + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := allocate(tc.ud, tc.existing)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAllocateMinMax(t *testing.T) {
	for _, tc := range []struct {
		name string
		ud   *appsv1alpha1.UnitedDeployment
		want map[string]int32
		err  bool
	}{
		{name: "mins in order, then maxes in order", ud: udWith(ptr.To[int32](10), sub("a", "", "2", "4"), sub("b", "", "3", "3"), sub("c", "", "1", "")),
			want: map[string]int32{"a": 4, "b": 3, "c": 3}},
		{name: "fewer than the mins: the first subsets get theirs", ud: udWith(ptr.To[int32](3), sub("a", "", "2", "4"), sub("b", "", "3", "")),
			want: map[string]int32{"a": 2, "b": 1}},
		{name: "nil max is unlimited", ud: udWith(ptr.To[int32](100), sub("a", "", "", "10"), sub("b", "", "", "")),
			want: map[string]int32{"a": 10, "b": 90}},
		{name: "percentages", ud: udWith(ptr.To[int32](10), sub("a", "", "", "25%"), sub("b", "", "", "")),
			want: map[string]int32{"a": 3, "b": 7}},
		{name: "all capped: the rest is not placed", ud: udWith(ptr.To[int32](10), sub("a", "", "", "2"), sub("b", "", "", "3")),
			want: map[string]int32{"a": 2, "b": 3}},
		{name: "min above max", ud: udWith(ptr.To[int32](10), sub("a", "", "5", "4"), sub("b", "", "", "")), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := allocate(tc.ud, nil)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func adaptive(ud *appsv1alpha1.UnitedDeployment, reserve bool) *appsv1alpha1.UnitedDeployment {
	ud.Spec.Topology.ScheduleStrategy = appsv1alpha1.UnitedDeploymentScheduleStrategy{
		Type:     appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{ReserveUnschedulablePods: reserve},
	}
	return ud
}

func TestAllocateAdaptive(t *testing.T) {
	three := func(total int32) *appsv1alpha1.UnitedDeployment {
		return adaptive(udWith(ptr.To(total), sub("a", "", "", "4"), sub("b", "", "", "4"), sub("c", "", "", "")), false)
	}
	for _, tc := range []struct {
		name     string
		ud       *appsv1alpha1.UnitedDeployment
		existing map[string]observed
		want     map[string]int32
	}{
		{name: "all schedulable: fill in order", ud: three(10), want: map[string]int32{"a": 4, "b": 4, "c": 2}},
		{name: "an unschedulable subset keeps its ready pods, the rest moves on", ud: three(10),
			existing: map[string]observed{"a": {replicas: 4, ready: 1, unschedulable: true}, "b": {replicas: 4, ready: 4}, "c": {replicas: 2, ready: 2}},
			want:     map[string]int32{"a": 1, "b": 4, "c": 5}},
		{name: "unschedulable with nothing ready: all moves", ud: three(6),
			existing: map[string]observed{"a": {replicas: 4, unschedulable: true}},
			want:     map[string]int32{"a": 0, "b": 4, "c": 2}},
		{name: "ready pods are never squeezed out by a scale down", ud: three(6),
			existing: map[string]observed{"a": {replicas: 4, ready: 4}, "b": {replicas: 4, ready: 2}, "c": {replicas: 3, ready: 3}},
			want:     map[string]int32{"a": 4, "b": 2, "c": 0}},
		{name: "a scale down takes the later subsets' pods first", ud: three(5),
			existing: map[string]observed{"a": {replicas: 4, ready: 2}, "b": {replicas: 4, ready: 1}, "c": {replicas: 2, ready: 0}},
			want:     map[string]int32{"a": 4, "b": 1, "c": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := allocate(tc.ud, tc.existing)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAllocateReserving(t *testing.T) {
	ud := adaptive(udWith(ptr.To[int32](6), sub("a", "", "", "4"), sub("b", "", "", "")), true)
	for _, tc := range []struct {
		name     string
		existing map[string]observed
		want     map[string]int32
	}{
		{name: "schedulable", want: map[string]int32{"a": 4, "b": 2}},
		{name: "reserved pods stay and their replicas are made again further on",
			existing: map[string]observed{"a": {replicas: 4, ready: 1, unschedulable: true, reserved: 3}, "b": {replicas: 2, ready: 2}},
			want:     map[string]int32{"a": 4, "b": 5}},
		{name: "a subset marked unschedulable with nothing reserved takes only what it has",
			existing: map[string]observed{"a": {replicas: 2, marked: true}},
			want:     map[string]int32{"a": 4, "b": 4}},
		{name: "recovered: back to the limits",
			existing: map[string]observed{"a": {replicas: 4, ready: 4}, "b": {replicas: 5, ready: 5}},
			want:     map[string]int32{"a": 4, "b": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := allocate(ud, tc.existing)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
