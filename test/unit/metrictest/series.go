package metrictest

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// Series returns every sample of family name that cs expose, by its labels
// written as in the exposition format ({a="x",b="y"}, sorted by name; "{}"
// without labels), with the counter or gauge value. Tests compare it whole,
// so a missing or an extra series fails them. (testutil.CollectAndCompare
// cannot parse text with the prometheus/common this module resolves.)
func Series(t testing.TB, name string, cs ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		require.NoError(t, reg.Register(c))
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			out[labelKey(m.GetLabel())] = value(m)
		}
	}
	return out
}

func labelKey(pairs []*dto.LabelPair) string {
	parts := make([]string, 0, len(pairs))
	for _, lp := range pairs {
		parts = append(parts, lp.GetName()+`="`+lp.GetValue()+`"`)
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}
