package cloneset

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Modes a pod is moved to a new revision by, the label of kruise_cloneset_pods_updated_total.
const (
	modeInPlace  = "inplace"
	modeRecreate = "recreate"
)

// metrics of the CloneSet controller. Labels are bounded: mode is one of two, result one of two.
type metrics struct {
	reconcile   *prometheus.HistogramVec
	inPlace     prometheus.Histogram
	podsUpdated *prometheus.CounterVec
	lostEvents  prometheus.CounterFunc
}

func newMetrics(lost func() float64) *metrics {
	m := &metrics{
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kruise_cloneset_reconcile_duration_seconds",
			Help:    "Time to reconcile one CloneSet once, by result: ok or error.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"result"}),
		inPlace: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kruise_cloneset_inplace_update_duration_seconds",
			Help: "Time from the start of a pod's in-place update to its InPlaceUpdateReady condition set True " +
				"(every container batch restarted and ready).",
			Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
		}),
		podsUpdated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_cloneset_pods_updated_total",
			Help: "Pods a CloneSet set out to move to its update revision, by mode: inplace, or recreate (deleted and replaced).",
		}, []string{"mode"}),
		lostEvents: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "kruise_cloneset_expectations_timed_out_total",
			Help: "Pod and PVC creations or deletions the CloneSet controller never saw in its cache within 5 minutes and stopped waiting for.",
		}, lost),
	}
	for _, r := range []string{"ok", "error"} {
		m.reconcile.WithLabelValues(r)
	}
	for _, mode := range []string{modeInPlace, modeRecreate} {
		m.podsUpdated.WithLabelValues(mode)
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.reconcile, m.inPlace, m.podsUpdated, m.lostEvents} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
