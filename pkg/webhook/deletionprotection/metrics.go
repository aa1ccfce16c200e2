package deletionprotection

import "github.com/prometheus/client_golang/prometheus"

// metrics are OpenKruise's counters of refused deletions, with its names
// and labels (the object's name and the user who asked). Only the webhook's
// refusals are counted: those of the ValidatingAdmissionPolicy (Always, and
// the workloads' Cascading) happen in the API server, which counts them in
// apiserver_validating_admission_policy_check_total.
type metrics struct {
	namespaces *prometheus.CounterVec
	crds       *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		namespaces: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "namespace_deletion_protection",
			Help: "Deletions of Namespaces refused by the policy.kruise.io/delete-protection webhook, by namespace and user.",
		}, []string{"name", "username"}),
		crds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crd_deletion_protection",
			Help: "Deletions of CustomResourceDefinitions refused by the policy.kruise.io/delete-protection webhook, by CRD and user.",
		}, []string{"name", "username"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.namespaces, m.crds}
}
