package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/workload/ordinals"
)

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
			var r ordinals.Reserved
			for _, o := range tc.reserved {
				r = append(r, ordinals.Range{From: o, To: o})
			}
			assert.Equal(t, tc.want, listWanted(ordinals.NewWanted(tc.start, tc.replicas, r)))
		})
	}
}

// A range as wide as the API admits costs nothing: ordinals are never expanded.
func TestWantedOrdinalsHugeRange(t *testing.T) {
	r, err := ordinals.Parse([]intstr.IntOrString{intstr.FromString("1-2000000000"), intstr.FromString("2000000000-2000000001")})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2000000002, 2000000003}, listWanted(ordinals.NewWanted(0, 3, r)))
}

// listWanted writes out the wanted ordinals of a small set.
func listWanted(w ordinals.Wanted) []int {
	out := []int{}
	for _, o := range w.All() {
		out = append(out, o)
	}
	return out
}

// wantedOf is the Wanted whose ordinals are list (ascending): from its first, the gaps reserved.
func wantedOf(list []int) ordinals.Wanted {
	if len(list) == 0 {
		return ordinals.NewWanted(0, 0, nil)
	}
	var reserved ordinals.Reserved
	for i := 1; i < len(list); i++ {
		if list[i] > list[i-1]+1 {
			reserved = append(reserved, ordinals.Range{From: list[i-1] + 1, To: list[i] - 1})
		}
	}
	return ordinals.NewWanted(list[0], len(list), reserved)
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
