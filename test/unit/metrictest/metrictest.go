// Package metrictest reads samples out of a Prometheus registry for unit
// tests: by family name and the exact set of labels, so a test fails when a
// label is added or renamed rather than silently matching a broader series.
package metrictest

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// Find returns the sample of family name whose labels are exactly labels,
// or nil when the registry has none.
func Find(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			got := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if maps.Equal(labels, got) {
				return m
			}
		}
	}
	return nil
}

// Counter is the value of a counter sample that must exist.
func Counter(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	m := Find(t, reg, name, labels)
	require.NotNil(t, m, "no sample %s%v", name, labels)
	return m.GetCounter().GetValue()
}

// CounterOrZero is the value of a counter sample, 0 when it was never
// incremented (a CounterVec has no sample for labels it has not seen).
func CounterOrZero(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	if m := Find(t, reg, name, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

// HistogramCount is the number of observations of a histogram sample, 0
// when it has none.
func HistogramCount(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) uint64 {
	t.Helper()
	if m := Find(t, reg, name, labels); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}
