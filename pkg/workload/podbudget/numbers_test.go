package podbudget

import (
	"testing"

	"github.com/stretchr/testify/assert"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestDesiredAvailable(t *testing.T) {
	for name, tc := range map[string]struct {
		b     *policyv1alpha1.PodUnavailableBudget
		total int32
		want  int32
		err   string
	}{
		"maxUnavailable count":                   {b: gen.PUB("b", gen.SetPUBMaxUnavailable("1")), total: 5, want: 4},
		"maxUnavailable above total floors at 0": {b: gen.PUB("b", gen.SetPUBMaxUnavailable("7")), total: 5, want: 0},
		"maxUnavailable percent rounds up":       {b: gen.PUB("b", gen.SetPUBMaxUnavailable("30%")), total: 5, want: 3}, // 1.5 → 2 unavailable
		"maxUnavailable 100%":                    {b: gen.PUB("b", gen.SetPUBMaxUnavailable("100%")), total: 5, want: 0},
		"minAvailable count":                     {b: gen.PUB("b", gen.SetPUBMinAvailable("2")), total: 5, want: 2},
		"minAvailable above total":               {b: gen.PUB("b", gen.SetPUBMinAvailable("9")), total: 5, want: 9},
		"minAvailable percent rounds up":         {b: gen.PUB("b", gen.SetPUBMinAvailable("50%")), total: 5, want: 3},
		"scaled to zero protects nothing":        {b: gen.PUB("b", gen.SetPUBMinAvailable("2")), total: 0, want: 0},
		"scaled to zero, maxUnavailable":         {b: gen.PUB("b", gen.SetPUBMaxUnavailable("0")), total: 0, want: 0},
		"bad percent":                            {b: gen.PUB("b", gen.SetPUBMaxUnavailable("x%")), total: 5, err: "maxUnavailable"},
		"neither":                                {b: gen.PUB("b"), total: 5, err: "neither"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := DesiredAvailable(tc.b, tc.total)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTotalOverride(t *testing.T) {
	with := func(v string) *policyv1alpha1.PodUnavailableBudget {
		return gen.PUB("b", gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: v}))
	}
	_, ok := TotalOverride(gen.PUB("b"))
	assert.False(t, ok)
	n, ok := TotalOverride(with("12"))
	assert.True(t, ok)
	assert.Equal(t, int32(12), n)
	for _, bad := range []string{"", "x", "-1", "99999999999"} {
		_, ok := TotalOverride(with(bad))
		assert.False(t, ok, bad)
	}
}
