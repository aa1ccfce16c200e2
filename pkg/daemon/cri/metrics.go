package cri

import (
	"context"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Metrics times and counts every CRI call made through a Runtime. One value
// belongs to one run of the daemon: it is registered in that run's registry
// (see Collectors), never in a process-wide one, so that a second run in the
// same process (tests with -count=2) registers fresh collectors.
type Metrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

// criDurationBuckets span a fast List (a few ms) to a StopContainer that
// waits out a long grace period or a PullImage of a large image.
var criDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// NewMetrics returns unregistered CRI call metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kruise_daemon_cri_request_duration_seconds",
			Help:    "Duration of CRI calls to the container runtime, by CRI method, failed calls included.",
			Buckets: criDurationBuckets,
		}, []string{"method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_daemon_cri_request_errors_total",
			Help: "CRI calls that returned an error, by CRI method and gRPC status code name. " +
				"NotFound from StopContainer and RemoveImage is counted here although the caller treats it as success.",
		}, []string{"method", "code"}),
	}
}

// Collectors returns the collectors to register in the daemon's registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.duration, m.errors}
}

// observe records one call. method is the bare CRI method name, e.g. "ExecSync".
func (m *Metrics) observe(method string, took time.Duration, err error) {
	m.duration.WithLabelValues(method).Observe(took.Seconds())
	if err != nil {
		m.errors.WithLabelValues(method, status.Code(err).String()).Inc()
	}
}

// unaryInterceptor measures at the gRPC layer, so every call on the
// connection is covered, those of the image service included: their method
// label is the bare CRI method name too ("PullImage", "ImageStatus",
// "RemoveImage").
func (m *Metrics) unaryInterceptor(ctx context.Context, fullMethod string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, fullMethod, req, reply, cc, opts...)
	// "/runtime.v1.RuntimeService/ExecSync" -> "ExecSync": the service is
	// implied by the metric name and keeps label values short.
	m.observe(path.Base(fullMethod), time.Since(start), err)
	return err
}
