package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestReservedOrdinals(t *testing.T) {
	cases := []struct {
		name    string
		in      []intstr.IntOrString
		want    []int
		wantErr bool
	}{
		{name: "none", want: nil},
		{name: "ints", in: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromInt32(4)}, want: []int{1, 4}},
		{name: "int as string", in: []intstr.IntOrString{intstr.FromString("3")}, want: []int{3}},
		{name: "range", in: []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("2-5")}, want: []int{0, 2, 3, 4, 5}},
		{name: "single-ordinal range", in: []intstr.IntOrString{intstr.FromString("7-7")}, want: []int{7}},
		{name: "backwards range", in: []intstr.IntOrString{intstr.FromString("5-2")}, wantErr: true},
		{name: "garbage", in: []intstr.IntOrString{intstr.FromString("a-b")}, wantErr: true},
		{name: "negative int reserves nothing", in: []intstr.IntOrString{intstr.FromInt32(-1)}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReservedOrdinals(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var has []int
			for o := 0; o < 10; o++ {
				if got.Has(o) {
					has = append(has, o)
				}
			}
			assert.Equal(t, tc.want, has)
		})
	}
}

func TestWantedOrdinals(t *testing.T) {
	cases := []struct {
		name            string
		start, replicas int
		reserved        []int
		want            []int
	}{
		{name: "from zero", start: 0, replicas: 3, want: []int{0, 1, 2}},
		{name: "start 3", start: 3, replicas: 5, want: []int{3, 4, 5, 6, 7}},
		{name: "reserved skipped, replicas still met", replicas: 4, reserved: []int{0, 2, 3}, want: []int{1, 4, 5, 6}},
		{name: "reserved below start ignored", start: 2, replicas: 2, reserved: []int{0, 1}, want: []int{2, 3}},
		{name: "reserved with start", start: 3, replicas: 3, reserved: []int{4}, want: []int{3, 5, 6}},
		{name: "zero replicas", replicas: 0, want: []int{}},
		{name: "consecutive reserved ordinals", replicas: 2, reserved: []int{0, 1, 2}, want: []int{3, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Reserved
			for _, o := range tc.reserved {
				r = append(r, OrdinalRange{o, o})
			}
			assert.Equal(t, tc.want, WantedOrdinals(tc.start, tc.replicas, r))
		})
	}
}

// A range as wide as the API admits costs nothing: ordinals are never expanded.
func TestWantedOrdinalsHugeRange(t *testing.T) {
	r, err := ReservedOrdinals([]intstr.IntOrString{intstr.FromString("1-2000000000"), intstr.FromString("2000000000-2000000001")})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2000000002, 2000000003}, WantedOrdinals(0, 3, r))
	assert.True(t, r.Has(1500000000))
}

func TestOrdinalOf(t *testing.T) {
	cases := []struct {
		set, pod string
		want     int
		ok       bool
	}{
		{"web", "web-0", 0, true},
		{"web", "web-12", 12, true},
		{"web", "web-a", 0, false},
		{"web", "web-01", 0, false},
		{"web", "web-", 0, false},
		{"web", "webx-1", 0, false},
		{"web", "web--1", 0, false},
		{"web-1", "web-1-2", 2, true},
	}
	for _, tc := range cases {
		got, ok := OrdinalOf(tc.set, tc.pod)
		assert.Equal(t, tc.ok, ok, "%s/%s", tc.set, tc.pod)
		if ok {
			assert.Equal(t, tc.want, got, "%s/%s", tc.set, tc.pod)
		}
	}
	assert.Equal(t, "web-3", PodName("web", 3))
	assert.Equal(t, "data-web-3", ClaimName("data", "web", 3))
}
