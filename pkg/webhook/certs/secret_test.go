package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	certutil "k8s.io/client-go/util/cert"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestManagedCreatesTheSecretAndWritesTheCAEverywhere(t *testing.T) {
	c := newCluster(t, targets()...)
	r := newReplica(t, c, newClock())
	next := r.sync()

	sec := c.secret(t)
	assert.Equal(t, corev1.SecretTypeTLS, sec.Type, "the type cert-manager writes: a switch to it needs no new Secret")
	for _, k := range []string{CAKeyKey, CACertKey, ServerKeyKey, ServerCertKey, TLSKeyKey, TLSCertKey} {
		assert.NotEmpty(t, sec.Data[k], k)
	}
	bundle := string(sec.Data[CACertKey])
	assert.Equal(t, map[string]string{
		"mutating/mpod.kb.io": bundle, "mutating/mcrr.kb.io": bundle, "validating/vcrr.kb.io": bundle,
		"crd/" + convertingCRD: bundle,
	}, c.bundles(t))
	assert.Nil(t, c.crd(t, plainCRD).Spec.Conversion.Webhook, "a CRD converting without a webhook is left alone")
	assert.Equal(t, []string{"create secrets", "patch mutatingwebhookconfigurations", "patch validatingwebhookconfigurations"}, r.writes())
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())

	assert.Equal(t, sec.Data[ServerCertKey], pemOf(t, r.served(t)))
	assert.Equal(t, sec.Data[CACertKey], r.CABundle())
	assert.NoError(t, r.Check(nil))
	st := r.Status()
	assert.True(t, st.Ready)
	assert.Empty(t, st.Problems)
	assert.Equal(t, t0.Add(DefaultCertValidity), st.NotAfter)
	assert.Equal(t, DefaultResync, next, "renewal is far away: the next check is the resync")

	events := gen.DrainEvents(r.recorder)
	require.Len(t, events, 4)
	assert.Contains(t, events[0], "Normal CertificateIssued created a CA and a serving certificate for kruise-webhook-service, ")
	assert.Contains(t, events[1], "Normal CABundleInjected wrote the CA of Secret kruise-system/kruise-webhook-certs into webhooks mpod.kb.io, mcrr.kb.io")
	assert.Contains(t, events[3], "Normal CABundleInjected wrote the CA of Secret kruise-system/kruise-webhook-certs into the conversion webhook")

	// Nothing differs any more: the next checks write nothing.
	r.sync()
	r.sync()
	assert.Empty(t, r.writes())
	assert.Empty(t, c.crdWrites())
	assert.Empty(t, gen.DrainEvents(r.recorder))
}

func pemOf(t *testing.T, c *x509.Certificate) []byte {
	t.Helper()
	out, err := certutil.EncodeCertificates(c)
	require.NoError(t, err)
	return out
}

func TestTheServingCertificateIsRenewedAtTwoThirdsOfItsLife(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk, func(cfg *Config) {
		cfg.CertValidity, cfg.CAValidity, cfg.Resync = 3*time.Hour, 30*time.Hour, 24*time.Hour
	})
	next := r.sync()
	first := r.served(t)
	ca := c.secret(t).Data[CACertKey]
	r.writes()
	c.crdWrites()
	gen.DrainEvents(r.recorder)

	// Issued at t0 - 5m for 3h: life 3h05m, renewal 1h01m40s before the end.
	due := first.NotAfter.Add(-(3*time.Hour + 5*time.Minute) / 3)
	assert.Equal(t, due.Sub(t0), next, "the next check is at the renewal point")

	clk.SetTime(due.Add(-time.Second))
	assert.Equal(t, time.Second, r.sync())
	assert.Empty(t, r.writes(), "not before the renewal point")
	assert.Equal(t, first.Raw, r.served(t).Raw)

	clk.SetTime(due)
	r.sync()
	assert.Equal(t, []string{"update secrets"}, r.writes(), "the Secret is renewed; the caBundles need nothing")
	assert.Empty(t, c.crdWrites())
	renewed := r.served(t)
	assert.NotEqual(t, first.SerialNumber, renewed.SerialNumber)
	assert.Equal(t, due.Add(3*time.Hour), renewed.NotAfter)
	assert.Equal(t, ca, c.secret(t).Data[CACertKey], "same CA")
	assert.Equal(t, c.secret(t).Data[ServerCertKey], pemOf(t, renewed))
	assert.NoError(t, r.Check(nil))
	events := gen.DrainEvents(r.recorder)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Normal CertificateIssued wrote a serving certificate, valid until")
	assert.Contains(t, events[0], "the serving certificate is due for renewal since")
}

// A TLS server configured with GetCertificate serves the renewed
// certificate at the next handshake, without being restarted.
func TestRenewalIsVisibleThroughGetCertificateWithoutRestart(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk, func(cfg *Config) { cfg.CertValidity = time.Hour })
	r.sync()
	serverConfig := &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12}

	first := handshake(t, serverConfig, r.CABundle(), clk.Now())
	clk.Step(time.Hour)
	r.sync()
	second := handshake(t, serverConfig, r.CABundle(), clk.Now())
	assert.NotEqual(t, first.SerialNumber, second.SerialNumber)
	assert.Equal(t, r.served(t).Raw, second.Raw)
}

// handshake runs one TLS handshake over an in-memory pipe, as the API
// server would dial the Service, and returns the certificate the server
// presented.
func handshake(t *testing.T, serverConfig *tls.Config, caBundle []byte, now time.Time) *x509.Certificate {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caBundle))
	clientConn, serverConn := net.Pipe()
	defer clientConn.Close()
	defer serverConn.Close()
	server := tls.Server(serverConn, serverConfig)
	done := make(chan error, 1)
	go func() { done <- server.HandshakeContext(context.Background()) }()
	client := tls.Client(clientConn, &tls.Config{
		RootCAs: roots, ServerName: ServiceHost(ServiceName, testNS), Time: func() time.Time { return now }, MinVersion: tls.VersionTLS12,
	})
	require.NoError(t, client.HandshakeContext(context.Background()))
	require.NoError(t, <-done)
	return client.ConnectionState().PeerCertificates[0]
}

func TestCARotationWritesABundleTrustingBothCAs(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk, func(cfg *Config) { cfg.CertValidity = time.Hour; cfg.CAValidity = 3 * time.Hour })
	r.sync()
	oldLeaf := r.served(t)
	oldCA := parseCerts(t, c.secret(t).Data[CACertKey])[0]
	r.writes()
	c.crdWrites()

	clk.SetTime(renewAt(oldCA))
	r.sync()
	bundle := c.secret(t).Data[CACertKey]
	trust := parseCerts(t, bundle)
	require.Len(t, trust, 2)
	assert.Equal(t, oldCA.Raw, trust[1].Raw)
	assert.Equal(t, []string{"update secrets", "patch mutatingwebhookconfigurations", "patch validatingwebhookconfigurations"}, r.writes())
	assert.Equal(t, []string{"patch customresourcedefinitions"}, c.crdWrites())
	for place, b := range c.bundles(t) {
		assert.Equal(t, string(bundle), b, place)
	}
	// The old serving certificate, still served by a replica that has not
	// read the new Secret yet, is trusted by the new bundle.
	assert.NoError(t, (&served{leaf: oldLeaf, intermediates: x509.NewCertPool()}).bundleTrusts(bundle, clk.Now()))
	assert.NoError(t, r.Check(nil))
	for _, e := range gen.DrainEvents(r.recorder) {
		assert.NotContains(t, e, "Overwritten", "our own rotation is not someone else's change")
	}
}

func TestAValidSecretWrittenByAnotherReplicaIsAdoptedAsIs(t *testing.T) {
	data, _ := issueFresh(t, t0, DefaultCAValidity, DefaultCertValidity)
	existing := gen.Secret(SecretName, gen.SetSecretNamespace(testNS), gen.SetSecretData(data))
	c := newCluster(t, append(targets(), existing)...)
	r := newReplica(t, c, newClock())
	r.sync()
	assert.Equal(t, []string{"patch mutatingwebhookconfigurations", "patch validatingwebhookconfigurations"}, r.writes(), "the Secret is not written")
	assert.Equal(t, data[ServerCertKey], pemOf(t, r.served(t)))
	assert.Equal(t, data, c.secret(t).Data)
}

func TestAnEmptySecretFromTheChartIsFilledInPlace(t *testing.T) {
	existing := gen.Secret(SecretName, gen.SetSecretNamespace(testNS), gen.SetSecretLabels(map[string]string{"app": "kruise"}))
	c := newCluster(t, append(targets(), existing)...)
	r := newReplica(t, c, newClock())
	r.sync()
	sec := c.secret(t)
	assert.Equal(t, map[string]string{"app": "kruise"}, sec.Labels, "metadata kept")
	assert.Equal(t, sec.Data[ServerCertKey], pemOf(t, r.served(t)))
	assert.Equal(t, []string{"update secrets", "patch mutatingwebhookconfigurations", "patch validatingwebhookconfigurations"}, r.writes())
	assert.NoError(t, r.Check(nil))
}

// Two replicas start on a cluster with no Secret. B reads (NotFound) and
// issues its own; before its create lands, A runs a whole check and creates
// the Secret. B's create fails with AlreadyExists: B adopts A's Secret.
func TestTwoReplicasStartingTogetherConvergeOnOneCA(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	a := newReplica(t, c, clk)
	b := newReplica(t, c, clk)
	runBefore(b, "create", func() { a.sync() })

	b.sync()

	sec := c.secret(t)
	assert.Equal(t, []string{"create secrets", "patch mutatingwebhookconfigurations", "patch validatingwebhookconfigurations"}, a.writes())
	assert.Equal(t, []string{"create secrets"}, b.writes(), "B's create failed; it wrote nothing else")
	assert.Equal(t, a.served(t).Raw, b.served(t).Raw, "B serves A's certificate")
	assert.Equal(t, sec.Data[CACertKey], b.CABundle())
	for place, bundle := range c.bundles(t) {
		assert.Equal(t, string(sec.Data[CACertKey]), bundle, place)
	}
	assert.NoError(t, a.Check(nil))
	assert.NoError(t, b.Check(nil))
	assertNoFlapping(t, clk, c, a, b)
}

// Both replicas start on a Secret whose serving certificate has expired and
// both decide to renew it. A's update lands first; B's, made at the
// resourceVersion it read, fails with a Conflict: B reads again and adopts
// A's certificate instead of overwriting it.
func TestTwoReplicasRenewingAStaleSecretConvergeOnOneCertificate(t *testing.T) {
	data, _ := issueFresh(t, t0.Add(-400*24*time.Hour), DefaultCAValidity, DefaultCertValidity)
	existing := gen.Secret(SecretName, gen.SetSecretNamespace(testNS), gen.SetSecretData(data))
	clk := newClock()
	c := newCluster(t, append(targets(), existing)...)
	a := newReplica(t, c, clk)
	b := newReplica(t, c, clk)
	runBefore(b, "update", func() { a.sync() })

	b.sync()

	assert.Equal(t, []string{"update secrets", "patch mutatingwebhookconfigurations", "patch validatingwebhookconfigurations"}, a.writes())
	assert.Equal(t, []string{"update secrets"}, b.writes(), "B's update lost the race and was not retried over A's")
	assert.Equal(t, a.served(t).Raw, b.served(t).Raw)
	assert.Equal(t, data[CACertKey], c.secret(t).Data[CACertKey], "the CA is kept")
	assert.Equal(t, c.secret(t).Data[ServerCertKey], pemOf(t, b.served(t)))
	assert.Equal(t, t0.Add(DefaultCertValidity), b.served(t).NotAfter)
	assertNoFlapping(t, clk, c, a, b)
}

// A replica that loaded a certificate earlier serves the one another
// replica renewed as soon as it checks again.
func TestAReplicaWithAnOlderCertificateAdoptsTheRenewedOne(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	a := newReplica(t, c, clk, func(cfg *Config) { cfg.CertValidity = time.Hour })
	b := newReplica(t, c, clk, func(cfg *Config) { cfg.CertValidity = time.Hour })
	a.sync()
	b.sync()
	old := b.served(t)
	clk.Step(time.Hour)
	a.sync()
	a.writes()
	b.writes()
	b.sync()
	assert.Empty(t, b.writes())
	assert.NotEqual(t, old.Raw, b.served(t).Raw)
	assert.Equal(t, a.served(t).Raw, b.served(t).Raw)
}

// runBefore makes r's first action with verb on the Secret run fn first
// (another replica acting between r's read and r's write).
func runBefore(r *replica, verb string, fn func()) {
	done := false
	r.client.PrependReactor(verb, "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !done {
			done = true
			fn()
		}
		return false, nil, nil
	})
}

// assertNoFlapping checks the replicas over many interleaved checks across
// a renewal: the Secret is renewed once, the caBundles never change, and the
// replicas always serve the same certificate.
func assertNoFlapping(t *testing.T, clk interface{ Step(time.Duration) }, c *cluster, a, b *replica) {
	t.Helper()
	a.writes()
	b.writes()
	c.crdWrites()
	bundles := c.bundles(t)
	secretWrites := 0
	for i := 0; i < 20; i++ {
		a.sync()
		b.sync()
		for _, w := range append(a.writes(), b.writes()...) {
			require.Equal(t, "update secrets", w, "only the Secret may be written, at a renewal")
			secretWrites++
		}
		require.Empty(t, c.crdWrites())
		require.Equal(t, bundles, c.bundles(t))
		require.Equal(t, a.served(t).Raw, b.served(t).Raw)
		clk.Step(30 * 24 * time.Hour)
	}
	// 20 steps of 30 days cross the first renewal (at about 243 days) and
	// the second (about 243 days later): one write each, by one replica.
	assert.Equal(t, 2, secretWrites)
}
