//go:build unix

package credentials

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekruise/kruise/test/unit/metrictest"
)

const errorsName = "kruise_daemon_credential_provider_errors_total"

// zeroSeries is the series of providers, all at zero.
func zeroSeries(providers ...string) map[string]float64 {
	out := map[string]float64{}
	for _, p := range providers {
		for _, r := range errorReasons {
			out[`{provider="`+p+`",reason="`+r+`"}`] = 0
		}
	}
	return out
}

// The series follow the providers in use: present at zero from the start,
// a reload adds the new providers' and drops the removed ones'; a config
// that fails to load changes nothing.
func TestErrorSeriesFollowTheConfig(t *testing.T) {
	bin := binDir(t, "alpha", "beta")
	m := NewMetrics()
	vol := newConfigMapVolume(t, configOf(t, testProvider("alpha", []string{"*.alpha.example"}), testProvider("beta", []string{"*.beta.example"})))
	r, err := NewReloader(vol.path(), bin, WithMetrics(m))
	require.NoError(t, err)
	assert.Equal(t, zeroSeries("alpha", "beta"), metrictest.Series(t, errorsName, m.Collectors()...))

	vol.update(configOf(t, testProvider("beta", []string{"*.beta.example"})))
	_, err = r.Check(context.Background())
	require.NoError(t, err)
	assert.Equal(t, zeroSeries("beta"), metrictest.Series(t, errorsName, m.Collectors()...))

	vol.update(configOf(t, testProvider("gamma", []string{"*.gamma.example"})))
	_, err = r.Check(context.Background())
	require.Error(t, err, "gamma has no binary")
	assert.Equal(t, zeroSeries("beta"), metrictest.Series(t, errorsName, m.Collectors()...))
}

// Without metrics nothing is counted and nothing fails.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.setProviders([]string{"a"})
	m.failed("a", errorExec)
}
