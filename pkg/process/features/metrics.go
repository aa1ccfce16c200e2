package features

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics/legacyregistry"
)

var enabledDesc = prometheus.NewDesc("kruise_feature_enabled",
	"1 when the kruise feature gate is enabled in this process, 0 when it is disabled.", []string{"name"}, nil)

// collector reports kruise_feature_enabled{name} from a gate at scrape time.
type collector struct{ gate featuregate.FeatureGate }

// NewCollector returns a collector of kruise_feature_enabled{name} for g's
// kruise gates.
func NewCollector(g featuregate.FeatureGate) prometheus.Collector { return collector{gate: g} }

func (c collector) Describe(ch chan<- *prometheus.Desc) { ch <- enabledDesc }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for name, on := range Effective(c.gate) {
		v := 0.0
		if on {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(enabledDesc, prometheus.GaugeValue, v, name)
	}
}

var registerOnce sync.Once

// RegisterMetrics adds kruise_feature_enabled for g to component-base's
// process-wide registry, which the /metrics endpoint of both binaries serves
// (see server.Gatherers). Only the first call in a process has an effect.
func RegisterMetrics(g featuregate.FeatureGate) error {
	var err error
	registerOnce.Do(func() {
		if rerr := legacyregistry.Registerer().Register(NewCollector(g)); rerr != nil {
			err = fmt.Errorf("registering kruise_feature_enabled: %w", rerr)
		}
	})
	return err
}
