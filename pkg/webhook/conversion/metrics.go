package conversion

import "github.com/prometheus/client_golang/prometheus"

// Results of a conversion request, the label of
// kruise_webhook_conversion_requests_total.
const (
	resultSucceeded = "succeeded" // every object converted
	resultFailed    = "failed"    // an object could not be converted: the API server's request fails
	resultError     = "error"     // a malformed request
)

// metrics of the conversion endpoint. Label values are bounded: result one
// of three, kind one of Kinds(), version one of the two served.
type metrics struct {
	duration prometheus.Histogram
	requests *prometheus.CounterVec
	objects  *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kruise_webhook_conversion_duration_seconds",
			Help: "Time to answer a conversion request (one object, or every item of a list), from its arrival to the written answer.",
			// A single object takes well under a millisecond; a list of
			// thousands, up to seconds.
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_webhook_conversion_requests_total",
			Help: "Conversion requests answered, by result: succeeded, failed (an object could not be converted; " +
				"the API server's request fails), error (a malformed request).",
		}, []string{"result"}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_webhook_converted_objects_total",
			Help: "Objects converted, by kind and the version converted to (apiVersion). " +
				"Conversions to apps.kruise.io/v1alpha1 show clients still reading or writing v1alpha1.",
		}, []string{"kind", "version"}),
	}
	for _, r := range []string{resultSucceeded, resultFailed, resultError} {
		m.requests.WithLabelValues(r)
	}
	for _, k := range Kinds() {
		m.objects.WithLabelValues(k, alpha)
		m.objects.WithLabelValues(k, beta)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.duration, m.requests, m.objects}
}
