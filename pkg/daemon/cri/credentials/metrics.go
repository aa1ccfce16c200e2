package credentials

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Why a plugin run failed, the reason label of
// kruise_daemon_credential_provider_errors_total.
const (
	errorTimeout         = "timeout"          // still running at the plugin timeout: killed
	errorExec            = "exec"             // could not start, exited non-zero or crashed
	errorInvalidResponse = "invalid_response" // output too large, not JSON, or not a v1 CredentialProviderResponse
)

var errorReasons = []string{errorTimeout, errorExec, errorInvalidResponse}

// Metrics counts failed plugin runs. One value belongs to one run of the
// daemon and is registered in its registry; give it to the loaders with
// WithMetrics. The provider label is bounded by the config: series exist,
// at zero, for the providers of the config in use, and go with them when a
// reload drops a provider. A nil *Metrics counts nothing.
type Metrics struct {
	errors *prometheus.CounterVec

	mu         sync.Mutex
	configured []string
}

// NewMetrics returns unregistered credential-provider metrics.
func NewMetrics() *Metrics {
	return &Metrics{errors: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kruise_daemon_credential_provider_errors_total",
		Help: "Failed runs of an exec credential provider plugin, by provider (its name in the config) and reason: " +
			"timeout (killed at the plugin timeout), exec (could not start, non-zero exit, crashed), " +
			"invalid_response (output not a usable CredentialProviderResponse).",
	}, []string{"provider", "reason"})}
}

// Collectors returns the collectors to register in the daemon's registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.errors}
}

// setProviders makes the series of the providers now in use, at zero, and
// drops those of providers no longer configured.
func (m *Metrics) setProviders(names []string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, old := range m.configured {
		if !slices.Contains(names, old) {
			m.errors.DeletePartialMatch(prometheus.Labels{"provider": old})
		}
	}
	for _, n := range names {
		for _, r := range errorReasons {
			m.errors.WithLabelValues(n, r)
		}
	}
	m.configured = slices.Clone(names)
}

func (m *Metrics) failed(provider, reason string) {
	if m != nil {
		m.errors.WithLabelValues(provider, reason).Inc()
	}
}
