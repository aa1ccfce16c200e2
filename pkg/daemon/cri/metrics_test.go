package cri_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekruise/kruise/test/unit/metrictest"
)

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
	assert.EqualValues(t, 1, metrictest.HistogramCount(t, env.reg, dur, map[string]string{"method": "Version"}), "the probe at connect time")
	assert.EqualValues(t, 3, metrictest.HistogramCount(t, env.reg, dur, map[string]string{"method": "ListContainers"}), "failed calls are timed too")
	assert.EqualValues(t, 2, metrictest.HistogramCount(t, env.reg, dur, map[string]string{"method": "ContainerStatus"}))
	assert.Equal(t, 1.0, metrictest.CounterOrZero(t, env.reg, errs, map[string]string{"method": "ListContainers", "code": "Unavailable"}))
	assert.Nil(t, metrictest.Find(t, env.reg, errs, map[string]string{"method": "ContainerStatus", "code": "OK"}), "successes are not errors")
}
