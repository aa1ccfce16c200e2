package sidecarset

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the SidecarSet controller. Labels are bounded: sidecarset by the SidecarSets that
// exist (a deleted one's series is dropped), result one of two.
type metrics struct {
	notUpgradable *prometheus.GaugeVec
	upgrades      *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		notUpgradable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kruise_sidecarset_not_upgradable_pods",
			Help: "Pods a SidecarSet's update strategy selects that differ from it in more than images, " +
				"so cannot be upgraded in place and stay at their version until recreated.",
		}, []string{"sidecarset"}),
		upgrades: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_sidecarset_pod_upgrades_total",
			Help: "In-place sidecar upgrades the SidecarSet controller wrote, by result: ok or error.",
		}, []string{"result"}),
	}
	for _, r := range []string{"ok", "error"} {
		m.upgrades.WithLabelValues(r)
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.notUpgradable, m.upgrades} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
