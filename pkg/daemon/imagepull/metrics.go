package imagepull

import "github.com/prometheus/client_golang/prometheus"

// Results of a tag's request, the label of kruise_daemon_image_pulls_total.
const (
	resultSucceeded = "succeeded"
	resultFailed    = "failed"
	resultPresent   = "present"
	resultCancelled = "cancelled"
)

// Metrics of the puller. Like cri.Metrics, one value belongs to one run of
// the daemon and is registered in that run's registry.
type Metrics struct {
	pulls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	failures *prometheus.CounterVec
}

// NewMetrics returns unregistered puller metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_daemon_image_pulls_total",
			Help: "NodeImage tags this daemon finished, by result: succeeded (pulled), failed (all attempts failed or deadline passed), " +
				"present (IfNotPresent and already on the node: no pull), cancelled (removed or changed while being pulled).",
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kruise_daemon_image_pull_duration_seconds",
			Help:    "Time from the first pull attempt of a NodeImage tag until it succeeded or failed, retries and backoffs included.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800},
		}, []string{"result"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kruise_daemon_image_pulls_in_flight",
			Help: "CRI PullImage calls of NodeImage tags under way.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_daemon_image_pull_failures_total",
			Help: "Failed pull attempts of NodeImage tags, retries included, by reason: auth (401/403, no or bad credentials), " +
				"not_found (no such image, tag or manifest), timeout (attempt timeout or deadline), " +
				"invalid (malformed reference, no image for the platform, unsupported media type), other.",
		}, []string{"reason"}),
	}
	for _, r := range []string{resultSucceeded, resultFailed, resultPresent, resultCancelled} {
		m.pulls.WithLabelValues(r)
	}
	for _, r := range failureClasses {
		m.failures.WithLabelValues(r)
	}
	return m
}

// Collectors returns the collectors to register in the daemon's registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.pulls, m.duration, m.inFlight, m.failures}
}
