package cri_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// findMetric returns the sample of family name whose labels are exactly
// labels, or nil.
func findMetric(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if assert.ObjectsAreEqual(labels, got) {
				return m
			}
		}
	}
	return nil
}

func counterValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	m := findMetric(t, reg, name, labels)
	if m == nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

func histogramCount(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) uint64 {
	t.Helper()
	m := findMetric(t, reg, name, labels)
	if m == nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}

func TestMetricsTimeAndCountEveryCall(t *testing.T) {
	env := newFakeEnv(t)
	ctx := context.Background()
	env.fake.AddContainer(podContainer("app-0", "app", 0, running))

	_, err := env.rt.PodContainers(ctx, "uid-a")
	require.NoError(t, err)
	_, err = env.rt.PodContainers(ctx, "uid-a")
	require.NoError(t, err)
	env.fake.SetCallError("ListContainers", status.Error(codes.Unavailable, "runtime restarting"))
	_, err = env.rt.PodContainers(ctx, "uid-a")
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err), "the gRPC status survives wrapping")

	const dur, errs = "kruise_daemon_cri_request_duration_seconds", "kruise_daemon_cri_request_errors_total"
	assert.EqualValues(t, 1, histogramCount(t, env.reg, dur, map[string]string{"method": "Version"}), "the probe at connect time")
	assert.EqualValues(t, 3, histogramCount(t, env.reg, dur, map[string]string{"method": "ListContainers"}), "failed calls are timed too")
	assert.EqualValues(t, 2, histogramCount(t, env.reg, dur, map[string]string{"method": "ContainerStatus"}))
	assert.Equal(t, 1.0, counterValue(t, env.reg, errs, map[string]string{"method": "ListContainers", "code": "Unavailable"}))
	assert.Nil(t, findMetric(t, env.reg, errs, map[string]string{"method": "ContainerStatus", "code": "OK"}), "successes are not errors")
}
