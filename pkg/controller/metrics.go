package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
)

// leaderMetrics implements client-go's leaderelection.MetricsProvider with
// the metric names the Kubernetes components use.
type leaderMetrics struct {
	status   *prometheus.GaugeVec
	slowpath *prometheus.CounterVec
}

type leaderMetric struct{ m *leaderMetrics }

func (l leaderMetric) On(name string)                { l.m.status.WithLabelValues(name).Set(1) }
func (l leaderMetric) Off(name string)               { l.m.status.WithLabelValues(name).Set(0) }
func (l leaderMetric) SlowpathExercised(name string) { l.m.slowpath.WithLabelValues(name).Inc() }

func (m *leaderMetrics) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetric{m} }

var (
	leaderMetricsOnce sync.Once
	processLeader     *leaderMetrics
)

// registerLeaderMetrics makes client-go's leader election report to reg.
// client-go takes one provider per process: the first call installs it.
func registerLeaderMetrics(reg prometheus.Registerer) error {
	leaderMetricsOnce.Do(func() {
		processLeader = &leaderMetrics{
			status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Name: "leader_election_master_status",
				Help: "1 while this replica holds the named lease, 0 otherwise.",
			}, []string{"name"}),
			slowpath: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "leader_election_slowpath_total",
				Help: "Lease renewals that had to fall back to a full get-and-update.",
			}, []string{"name"}),
		}
		leaderelection.SetProvider(processLeader)
	})
	for _, c := range []prometheus.Collector{processLeader.status, processLeader.slowpath} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
