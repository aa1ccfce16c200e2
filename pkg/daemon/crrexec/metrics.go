package crrexec

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of a CRR, the label of kruise_daemon_crr_completed_total.
const (
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
	outcomeCancelled = "cancelled"
)

// Metrics of the executor. Like cri.Metrics, one value belongs to one run of
// the daemon and is registered in that run's registry.
type Metrics struct {
	completed *prometheus.CounterVec
	duration  prometheus.Histogram
}

// NewMetrics returns unregistered executor metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_daemon_crr_completed_total",
			Help: "ContainerRecreateRequests this daemon finished, by outcome: succeeded (every container recreated), " +
				"failed (some container failed), cancelled (completed by someone else or gone while this daemon worked on it).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kruise_daemon_container_recreate_duration_seconds",
			Help:    "Time from the start of a container's kill (preStop included) until its new instance counted as Succeeded.",
			Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
		}),
	}
	for _, o := range []string{outcomeSucceeded, outcomeFailed, outcomeCancelled} {
		m.completed.WithLabelValues(o)
	}
	return m
}

// Collectors returns the collectors to register in the daemon's registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.completed, m.duration}
}
