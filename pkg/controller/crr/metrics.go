package crr

import (
	"github.com/prometheus/client_golang/prometheus"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// Why a CRR completed, the reason label of kruise_crr_completed_total:
// the daemon's verdict for the requests it finished, or the controller's
// Event reason for those it completed itself.
const (
	CompletionSucceeded = "Succeeded" // the daemon recreated every container
	CompletionFailed    = "Failed"    // the daemon finished with a container failed
)

// completionReasons are every value of the reason label.
var completionReasons = []string{
	CompletionSucceeded, CompletionFailed,
	ReasonDeadlineExceeded, ReasonNoLiveDaemon, ReasonPodGone, ReasonPodReplaced, ReasonInvalidRequest,
}

var waitingDesc = prometheus.NewDesc("kruise_crr_waiting_on_absent_daemon",
	"Admitted, unfinished ContainerRecreateRequests on a node whose kruise-daemon has not renewed its heartbeat Lease "+
		"within the lease duration, by node; only nodes with some. Emitted by the leader only.",
	[]string{"node"}, nil)

// metrics of the CRR controller. Labels are bounded: reason by the fixed
// completionReasons, node by the nodes.
type metrics struct {
	completed *prometheus.CounterVec
	waiting   waitingCollector
}

func newMetrics(c *Controller) *metrics {
	m := &metrics{
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kruise_crr_completed_total",
			Help: "ContainerRecreateRequests the controller saw complete, by reason: Succeeded or Failed (finished by the daemon), " +
				"or DeadlineExceeded, NoLiveDaemon, PodGone, PodReplaced, InvalidRequest (completed by the controller).",
		}, []string{"reason"}),
		waiting: waitingCollector{c: c},
	}
	for _, r := range completionReasons {
		m.completed.WithLabelValues(r)
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.completed, m.waiting} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// daemonCompletion is the reason of a request the daemon completed.
func daemonCompletion(crr *appsv1alpha1.ContainerRecreateRequest) string {
	done := map[string]bool{}
	for _, st := range crr.Status.ContainerRecreateStates {
		done[st.Name] = st.Phase == appsv1alpha1.ContainerRecreateRequestSucceeded
	}
	for _, ctr := range crr.Spec.Containers {
		if !done[ctr.Name] {
			return CompletionFailed
		}
	}
	return CompletionSucceeded
}

// waitingCollector counts, at scrape time, the admitted, unfinished CRRs
// of each node whose daemon is not live, from the informer's node index and
// the liveness the controller keeps. It keeps nothing of its own. It says
// nothing unless the controller runs: on a standby, before the caches have
// synced, and after leadership is lost, what it would read is not the
// cluster's.
type waitingCollector struct{ c *Controller }

func (w waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- waitingDesc }

func (w waitingCollector) Collect(ch chan<- prometheus.Metric) {
	c := w.c
	if !c.running.Load() {
		return
	}
	now := c.clock.Now()
	for _, node := range c.crrIndexer.ListIndexFuncValues(nodeIndex) {
		if node == "" || now.Before(c.liveness.liveUntil(node)) {
			continue
		}
		objs, err := c.crrIndexer.ByIndex(nodeIndex, node)
		if err != nil || len(objs) == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(len(objs)), node)
	}
}
