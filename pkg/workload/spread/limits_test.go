package spread

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func TestMaxReplicas(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
	for _, tc := range []struct {
		name      string
		max       *intstr.IntOrString
		total     int32
		want      int32
		unlimited bool
		err       string
	}{
		{name: "unset is unlimited", max: nil, total: 10, unlimited: true},
		{name: "count as written", max: num(3), total: 10, want: 3},
		{name: "count above total is kept", max: num(30), total: 10, want: 30},
		{name: "34% of 10 rounds up", max: pct("34%"), total: 10, want: 4},
		{name: "33% of 10 rounds up", max: pct("33%"), total: 10, want: 4},
		{name: "50% of 3 rounds up", max: pct("50%"), total: 3, want: 2},
		{name: "exact percent", max: pct("20%"), total: 10, want: 2},
		{name: "percent of zero", max: pct("50%"), total: 0, want: 0},
		{name: "0%", max: pct("0%"), total: 7, want: 0},
		{name: "100%", max: pct("100%"), total: 7, want: 7},
		{name: "huge total does not overflow", max: pct("100%"), total: 2147483647, want: 2147483647},
		{name: "negative count", max: num(-1), err: "negative"},
		{name: "string without percent", max: pct("5"), err: "neither a count nor a percentage"},
		{name: "bad percent", max: pct("x%"), err: "not a non-negative percentage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unlimited, err := MaxReplicas(&appsv1alpha1.WorkloadSpreadSubset{Name: "a", MaxReplicas: tc.max}, tc.total)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.unlimited, unlimited)
			assert.Equal(t, tc.want, got)
		})
	}
}
