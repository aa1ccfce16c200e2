package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"

	// client-go's workqueue, REST client and leader-election metrics, with the names and labels
	// the Kubernetes components use, registered in component-base's process-wide registry.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
)

// NewRegistry returns a registry for one run's own metrics (the daemon's CRI gauges, say).
// Gather it through Gatherers, which adds the process-wide metrics.
func NewRegistry() *prometheus.Registry {
	return prometheus.NewRegistry()
}

// Gatherers serves own together with component-base's process-wide registry: Go runtime,
// process, client-go workqueue, REST client and leader-election metrics.
func Gatherers(own prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.Gatherers{own, legacyregistry.DefaultGatherer}
}
