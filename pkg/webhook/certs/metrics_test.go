package certs

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekruise/kruise/test/unit/metrictest"
)

const expiryName = "kruise_webhook_certificate_expiry_timestamp_seconds"

// The gauge is the served certificate's NotAfter, managed or external, and
// absent before one is loaded.
func TestExpiryIsTheServedCertificatesNotAfter(t *testing.T) {
	iss := newIssuer(t)
	const externalValidity = 90 * 24 * time.Hour
	cases := []struct {
		name       string
		cluster    func() *cluster
		mods       []func(*Config)
		wantExpiry time.Time
	}{
		{name: "managed", cluster: func() *cluster { return newCluster(t, targets()...) }, wantExpiry: t0.Add(DefaultCertValidity)},
		{name: "external", cluster: func() *cluster {
			data := iss.secretData(t, t0.Add(-time.Hour), externalValidity)
			return newCluster(t, append(injected(iss.ca.certPEM), externalSecret(data))...)
		}, mods: []func(*Config){external}, wantExpiry: t0.Add(-time.Hour).Add(externalValidity)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReplica(t, tc.cluster(), newClock(), tc.mods...)
			assert.Empty(t, metrictest.Series(t, expiryName, r.ExpiryCollector()), "no series before a certificate is loaded")
			r.sync()
			notAfter := r.served(t).NotAfter
			require.WithinDuration(t, tc.wantExpiry, notAfter, time.Hour, "the fixture's certificate")
			assert.Equal(t, map[string]float64{"{}": float64(notAfter.Unix())}, metrictest.Series(t, expiryName, r.ExpiryCollector()),
				fmt.Sprintf("NotAfter %s", notAfter))
		})
	}
}
