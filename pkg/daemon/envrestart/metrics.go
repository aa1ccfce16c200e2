package envrestart

import "github.com/prometheus/client_golang/prometheus"

// Results, the label of kruise_daemon_env_from_metadata_restarts_total.
const (
	// resultRestarted: the container was stopped; the kubelet starts a new
	// one, which reads the pod's current metadata.
	resultRestarted = "restarted"
	// resultFailed: stopping it failed; it is tried again with backoff.
	resultFailed = "failed"
	// resultSkipped: its env is out of date but its pod's restartPolicy is
	// not Always, so a stop could end it for good; it is left running.
	resultSkipped = "skipped"
	// resultUnknown: the runtime could not say what env the container was
	// created with; it is left running and asked again with backoff.
	resultUnknown = "unknown"
)

// Metrics of the restarter. One value belongs to one run of the daemon and
// is registered in that run's registry.
type Metrics struct {
	restarts *prometheus.CounterVec
}

// NewMetrics returns unregistered restarter metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_daemon_env_from_metadata_restarts_total",
			Help: "Containers whose env from pod labels or annotations was out of date during an in-place update, by result: " +
				"restarted (stopped once; the kubelet starts a new one), failed (the stop failed; retried), " +
				"skipped (restartPolicy is not Always; left running), unknown (the runtime could not tell the env; left running, asked again).",
		}, []string{"result"}),
	}
	for _, r := range []string{resultRestarted, resultFailed, resultSkipped, resultUnknown} {
		m.restarts.WithLabelValues(r)
	}
	return m
}

// Collectors returns the collectors to register in the daemon's registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.restarts}
}

func (m *Metrics) count(result string) { m.restarts.WithLabelValues(result).Inc() }
