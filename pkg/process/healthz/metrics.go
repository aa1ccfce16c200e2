package healthz

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"

	// client-go's workqueue and REST client metrics, with the names and labels the Kubernetes
	// components use, registered in component-base's process-wide registry. Not the
	// clientgo package: its leader-election metrics import every API group's types, which
	// the daemon does not need (kruise-controller imports them itself, see pkg/controller).
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

// NewRegistry returns a registry for one run's own metrics (the daemon's CRI gauges, say).
// Gather it through Gatherers, which adds the process-wide metrics.
func NewRegistry() *prometheus.Registry {
	return prometheus.NewRegistry()
}

// Gatherers serves own together with component-base's process-wide registry: Go runtime,
// process, client-go workqueue and REST client metrics (and leader election's, in the
// controller).
func Gatherers(own prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.Gatherers{own, legacyregistry.DefaultGatherer}
}
