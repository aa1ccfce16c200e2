package podbudget

import (
	"github.com/prometheus/client_golang/prometheus"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// Results of Admit, the label of kruise_pod_unavailable_budget_decisions_total.
const (
	resultFree    = "free"    // allowed without a charge
	resultCharged = "charged" // allowed, the pod recorded in the budget (or would be: dryRun)
	resultRefused = "refused" // no room in the budget
	resultError   = "error"   // could not decide
)

// newDecisions is the counter of Admit's decisions; label values are bounded (four operations,
// four results).
func newDecisions() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kruise_pod_unavailable_budget_decisions_total",
		Help: "Disruptions of pods asked of PodUnavailableBudgets, by operation (DELETE, EVICT, UPDATE, RESIZE) and result: " +
			"free (no budget, not guarded, pod unavailable, already recorded), charged (allowed and recorded), refused (no room), error.",
	}, []string{"operation", "result"})
	for _, op := range []policyv1alpha1.PubOperation{policyv1alpha1.PubDeleteOperation, policyv1alpha1.PubEvictOperation,
		policyv1alpha1.PubUpdateOperation, policyv1alpha1.PubResizeOperation} {
		for _, r := range []string{resultFree, resultCharged, resultRefused, resultError} {
			c.WithLabelValues(string(op), r)
		}
	}
	return c
}

// Collectors are the Admitter's metrics, for the caller to register.
func (a *Admitter) Collectors() []prometheus.Collector { return []prometheus.Collector{a.decisions} }
