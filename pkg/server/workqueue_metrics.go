package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Workqueue metric names follow the convention of the Kubernetes components,
// so existing dashboards work unchanged.
const workqueueSubsystem = "workqueue"

// workqueueMetrics implements workqueue.MetricsProvider on plain
// client_golang vectors labelled by queue name.
type workqueueMetrics struct {
	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec
}

func newWorkqueueMetrics() *workqueueMetrics {
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12) // 10ns .. ~1000s
	labels := []string{"name"}
	return &workqueueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workqueueSubsystem, Name: "depth",
			Help: "Current depth of the workqueue.",
		}, labels),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: workqueueSubsystem, Name: "adds_total",
			Help: "Total number of adds handled by the workqueue.",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: workqueueSubsystem, Name: "queue_duration_seconds",
			Help: "How long in seconds an item stays in the workqueue before being requested.", Buckets: buckets,
		}, labels),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: workqueueSubsystem, Name: "work_duration_seconds",
			Help: "How long in seconds processing an item from the workqueue takes.", Buckets: buckets,
		}, labels),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workqueueSubsystem, Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration; large values suggest stuck workers.",
		}, labels),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workqueueSubsystem, Name: "longest_running_processor_seconds",
			Help: "Seconds the longest running processor of the workqueue has been running.",
		}, labels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: workqueueSubsystem, Name: "retries_total",
			Help: "Total number of retries handled by the workqueue.",
		}, labels),
	}
}

func (m *workqueueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.depth, m.adds, m.latency, m.workDuration, m.unfinished, m.longestRunning, m.retries}
}

func (m *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

func (m *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

func (m *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

func (m *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunning.WithLabelValues(name)
}

func (m *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}

var (
	workqueueOnce           sync.Once
	processWorkqueueMetrics *workqueueMetrics
)

// RegisterWorkqueueMetrics makes client-go's workqueues report to reg.
// client-go accepts one provider per process, so the first call installs it
// and later calls register the same collectors with their own registry.
func RegisterWorkqueueMetrics(reg prometheus.Registerer) error {
	workqueueOnce.Do(func() {
		processWorkqueueMetrics = newWorkqueueMetrics()
		workqueue.SetProvider(processWorkqueueMetrics)
	})
	for _, c := range processWorkqueueMetrics.collectors() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
