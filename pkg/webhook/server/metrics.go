package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of an admission request, the label of
// kruise_webhook_admission_requests_total.
const (
	resultAllowed = "allowed" // admitted unchanged
	resultPatched = "patched" // admitted with a patch
	resultDenied  = "denied"  // refused by the handler's decision
	resultError   = "error"   // a bad request, a handler error or panic, an invalid patch
)

// admissionDurationBuckets resolve the few milliseconds a handler should take
// (the mutating pod webhook's budget is 5 ms at p99) up to the API server's
// 30 s limit.
var admissionDurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// metrics of the admission webhooks. Label values are bounded: webhook is one
// of the registered names, result one of four, reason one of a webhook's
// declared reasons or the server's own.
type metrics struct {
	duration   *prometheus.HistogramVec
	requests   *prometheus.CounterVec
	rejections *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kruise_webhook_admission_duration_seconds",
			Help: "Time to answer an admission request, from its arrival to the written answer " +
				"(decoding, the handler, encoding), by webhook.",
			Buckets: admissionDurationBuckets,
		}, []string{"webhook"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_webhook_admission_requests_total",
			Help: "Admission requests answered, by webhook and result: allowed (unchanged), patched (allowed with a patch), " +
				"denied (refused by the webhook's decision), error (a malformed request, or the handler failed or panicked).",
		}, []string{"webhook", "result"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_webhook_admission_rejections_total",
			Help: "Admission requests refused in the answer, by webhook and reason: a reason the webhook declares, " +
				"Other (one it does not), HandlerError, Panic or InvalidPatch (the handler failed). Malformed requests are not counted here.",
		}, []string{"webhook", "reason"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.duration, m.requests, m.rejections}
}

// initWebhook creates the series of a webhook at zero, so that rates and
// alerts see them before the first request.
func (m *metrics) initWebhook(name string, reasons []string) {
	m.duration.WithLabelValues(name)
	for _, r := range []string{resultAllowed, resultPatched, resultDenied, resultError} {
		m.requests.WithLabelValues(name, r)
	}
	for _, r := range append([]string{ReasonOther, ReasonHandlerError, ReasonPanic, ReasonInvalidPatch}, reasons...) {
		m.rejections.WithLabelValues(name, r)
	}
}

func (m *metrics) observe(webhook string, out outcome, took time.Duration) {
	m.duration.WithLabelValues(webhook).Observe(took.Seconds())
	m.requests.WithLabelValues(webhook, out.result).Inc()
	if out.reason != "" {
		m.rejections.WithLabelValues(webhook, out.reason).Inc()
	}
}
