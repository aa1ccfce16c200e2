package podprobe

import (
	"github.com/prometheus/client_golang/prometheus"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Metrics of the prober, registered in the daemon's registry.
type Metrics struct {
	probes *prometheus.CounterVec
	writes *prometheus.CounterVec
}

// NewMetrics returns unregistered prober metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_daemon_pod_probes_total",
			Help: "Node probes run (NodePodProbe), by type (exec, tcp, http, grpc) and result: succeeded, failed, " +
				"or error (the probe could not run; it counts for nothing).",
		}, []string{"type", "result"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_daemon_pod_probe_status_writes_total",
			Help: "NodePodProbe status writes, by result (success, error); one only when some probe's state or message changed.",
		}, []string{"result"}),
	}
	for _, k := range []string{kindExec, kindTCP, kindHTTP} {
		for _, r := range []string{"succeeded", "failed", "error"} {
			m.probes.WithLabelValues(k, r)
		}
	}
	m.writes.WithLabelValues("success")
	m.writes.WithLabelValues("error")
	return m
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.probes, m.writes}
}

func (m *Metrics) probed(kind string, out outcome) {
	if m == nil {
		return
	}
	r := "failed"
	switch {
	case out.err != nil:
		r = "error"
	case out.state == appsv1alpha1.ProbeSucceeded:
		r = "succeeded"
	}
	m.probes.WithLabelValues(kind, r).Inc()
}

func (m *Metrics) wrote(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.writes.WithLabelValues("error").Inc()
		return
	}
	m.writes.WithLabelValues("success").Inc()
}
