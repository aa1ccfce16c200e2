package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func issueFresh(t *testing.T, now time.Time, caValidity, certValidity time.Duration) (map[string][]byte, *served) {
	t.Helper()
	data, s, err := issue(plan{newCA: true, newLeaf: true}, nil, DNSNames(ServiceName, testNS), caValidity, certValidity, now)
	require.NoError(t, err)
	return data, s
}

func TestIssueChainsCoversTheServiceAndHasTheConfiguredValidity(t *testing.T) {
	data, s := issueFresh(t, t0, DefaultCAValidity, DefaultCertValidity)

	for _, k := range []string{CAKeyKey, CACertKey, ServerKeyKey, ServerCertKey, TLSKeyKey, TLSCertKey} {
		assert.NotEmpty(t, data[k], k)
	}
	assert.Equal(t, data[ServerCertKey], data[TLSCertKey], "tls.crt is cert.pem")
	assert.Equal(t, data[ServerKeyKey], data[TLSKeyKey], "tls.key is key.pem")
	assert.Equal(t, data[CACertKey], s.bundle, "the bundle is ca-cert.pem")

	cas := parseCerts(t, data[CACertKey])
	require.Len(t, cas, 1)
	ca := cas[0]
	assert.True(t, ca.IsCA)
	assert.True(t, ca.BasicConstraintsValid)
	assert.Equal(t, t0.Add(DefaultCAValidity), ca.NotAfter)
	assert.Equal(t, t0.Add(-maxSkewAllowance), ca.NotBefore)
	assert.Equal(t, x509.ECDSA, ca.PublicKeyAlgorithm)
	assert.Equal(t, elliptic.P256(), ca.PublicKey.(*ecdsa.PublicKey).Curve)

	pair, err := tls.X509KeyPair(data[ServerCertKey], data[ServerKeyKey])
	require.NoError(t, err)
	leaf := pair.Leaf
	assert.False(t, leaf.IsCA)
	assert.Equal(t, t0.Add(DefaultCertValidity), leaf.NotAfter)
	assert.Equal(t, t0.Add(-maxSkewAllowance), leaf.NotBefore)
	assert.Equal(t, []string{
		"kruise-webhook-service", "kruise-webhook-service.kruise-system",
		"kruise-webhook-service.kruise-system.svc", "kruise-webhook-service.kruise-system.svc.cluster.local",
	}, leaf.DNSNames)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.ExtKeyUsage)
	assert.Equal(t, leaf.Raw, s.leaf.Raw)

	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range leaf.DNSNames {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: t0})
		assert.NoError(t, err, "verifies for %s", name)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.kruise-system.svc", CurrentTime: t0})
	assert.Error(t, err)

	// Renewal falls at two thirds of the serving certificate's life.
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	assert.Equal(t, leaf.NotAfter.Add(-life/3), s.renewAt)
}

func TestShortValiditiesAreBackdatedLessAndStillLeaveTimeBeforeRenewal(t *testing.T) {
	_, s := issueFresh(t, t0, 10*time.Minute, 2*time.Minute)
	assert.Equal(t, t0.Add(-12*time.Second), s.leaf.NotBefore, "a tenth of the validity, not five minutes")
	assert.Equal(t, t0.Add(2*time.Minute), s.leaf.NotAfter)
	assert.True(t, s.renewAt.After(t0), "a new certificate is not already due")
	assert.Equal(t, t0.Add(2*time.Minute-44*time.Second), s.renewAt) // life 132 s, a third is 44 s
}

func TestServingCertificateNeverOutlivesItsCA(t *testing.T) {
	ca, err := newCA(t0, time.Hour)
	require.NoError(t, err)
	leaf, err := newServing(t0, 24*time.Hour, ca.cert, ca.key, DNSNames(ServiceName, testNS))
	require.NoError(t, err)
	assert.Equal(t, ca.cert.NotAfter, leaf.cert.NotAfter)
}

func TestConfigDefaultsAndRefusals(t *testing.T) {
	cfg, err := Config{Namespace: "ns", Client: newCluster(t).client()}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, ModeManaged, cfg.Mode)
	assert.Equal(t, SecretName, cfg.SecretName)
	assert.Equal(t, ServiceName, cfg.ServiceName)
	assert.Equal(t, MutatingWebhookConfigurationName, cfg.MutatingWebhookConfiguration)
	assert.Equal(t, ValidatingWebhookConfigurationName, cfg.ValidatingWebhookConfiguration)
	assert.Equal(t, DefaultCAValidity, cfg.CAValidity)
	assert.Equal(t, DefaultCertValidity, cfg.CertValidity)
	assert.Equal(t, DefaultResync, cfg.Resync)

	_, err = New(Config{Mode: "Auto", CRDs: []string{"x"}, CertValidity: time.Second, CAValidity: time.Hour})
	require.Error(t, err)
	for _, want := range []string{
		`mode "Auto"`, "namespace is required", "a Kubernetes client is required",
		"an apiextensions client is required", "serving certificate validity 1s is shorter than 1m0s",
	} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = New(Config{Namespace: "ns", Client: newCluster(t).client(), CAValidity: time.Hour, CertValidity: 2 * time.Hour})
	assert.ErrorContains(t, err, "CA validity 1h0m0s is shorter than the serving certificate's 2h0m0s")
}
