package partition

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCount(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	for _, tc := range []struct {
		v        *intstr.IntOrString
		replicas int
		want     int
	}{
		{nil, 4, 0},
		{pct("0%"), 4, 0},
		{pct("1%"), 4, 1},  // above 0% keeps one
		{pct("50%"), 3, 2}, // 1.5 rounds up
		{pct("50%"), 4, 2},
		{pct("75%"), 4, 3},
		{pct("99%"), 4, 3}, // rounds up to 4, capped at replicas-1: one pod is updated
		{pct("99%"), 100, 99},
		{pct("99%"), 2, 1},
		{pct("99%"), 1, 1}, // one replica: no cap, the pod is kept
		{pct("100%"), 4, 4},
		{pct("150%"), 4, 4},
		{pct("50%"), 0, 0},
		{num(3), 4, 3},
		{num(4), 4, 4},
		{num(9), 4, 4},
	} {
		got, err := Count(tc.v, tc.replicas)
		if err != nil || got != tc.want {
			t.Errorf("Count(%v, %d) = %d, %v; want %d", tc.v, tc.replicas, got, err, tc.want)
		}
	}
	for _, bad := range []*intstr.IntOrString{pct("half"), pct("5"), num(-1)} {
		if _, err := Count(bad, 4); err == nil {
			t.Errorf("Count(%v) took a value it should refuse", bad)
		}
	}
}
