package certs

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// issuer stands for cert-manager: a CA Issuer and a Certificate for the
// webhook Service (the names of the seed's Certificate).
type issuer struct{ ca *issued }

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	ca, err := newCA(t0.Add(-24*time.Hour), 5*365*24*time.Hour)
	require.NoError(t, err)
	return &issuer{ca: ca}
}

// secretData is what cert-manager writes into the Certificate's Secret.
func (i *issuer) secretData(t *testing.T, notBefore time.Time, validity time.Duration, names ...string) map[string][]byte {
	t.Helper()
	if len(names) == 0 {
		names = []string{ServiceHost(ServiceName, testNS), ServiceHost(ServiceName, testNS) + ".cluster.local"}
	}
	leaf, err := newServing(notBefore, validity, i.ca.cert, i.ca.key, names)
	require.NoError(t, err)
	return map[string][]byte{ExternalCAKey: i.ca.certPEM, TLSCertKey: leaf.certPEM, TLSKeyKey: leaf.keyPEM}
}

func externalSecret(data map[string][]byte) *corev1.Secret {
	return gen.Secret(SecretName, gen.SetSecretNamespace(testNS), gen.SetSecretUID("uid-secret"),
		gen.SetSecretType(corev1.SecretTypeTLS), gen.SetSecretData(data))
}

// injected are the targets with the caBundle cainjector writes.
func injected(bundle []byte) []runtime.Object {
	return []runtime.Object{mutatingConfig(bundle), validatingConfig(bundle), webhookCRD(convertingCRD, bundle), noneCRD(plainCRD)}
}

func external(cfg *Config) { cfg.Mode = ModeExternal }

func TestExternalValidSecretAndInjectedCAIsReadyAndWritesNothing(t *testing.T) {
	iss := newIssuer(t)
	data := iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	c := newCluster(t, append(injected(iss.ca.certPEM), externalSecret(data))...)
	r := newReplica(t, c, newClock(), external)
	r.sync()

	assert.Empty(t, r.writes(), "external mode patches nothing")
	assert.Empty(t, c.crdWrites())
	assert.NoError(t, r.Check(nil))
	assert.Equal(t, data[TLSCertKey], pemOf(t, r.served(t)))
	assert.Equal(t, iss.ca.certPEM, r.CABundle())
	assert.Empty(t, gen.DrainEvents(r.recorder))
}

// cert-manager's selfSigned Issuer makes ca.crt the serving certificate
// itself; a caBundle of ca.crt then trusts it as it is.
func TestExternalSelfSignedLeafIsItsOwnCA(t *testing.T) {
	key, err := newKey()
	require.NoError(t, err)
	tmpl, err := servingTemplate(t0.Add(-time.Hour), 90*24*time.Hour, []string{ServiceHost(ServiceName, testNS)})
	require.NoError(t, err)
	self, err := sign(tmpl, tmpl, key, key)
	require.NoError(t, err)
	data := map[string][]byte{ExternalCAKey: self.certPEM, TLSCertKey: self.certPEM, TLSKeyKey: self.keyPEM}
	c := newCluster(t, append(injected(self.certPEM), externalSecret(data))...)
	r := newReplica(t, c, newClock(), external)
	r.sync()
	assert.NoError(t, r.Check(nil))
}

func TestExternalBadSecretsAreReportedOnTheSecret(t *testing.T) {
	iss := newIssuer(t)
	other := newIssuer(t)
	good := iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	tests := []struct {
		name string
		data map[string][]byte
		want []string
	}{
		{
			name: "wrong CA",
			data: map[string][]byte{ExternalCAKey: other.ca.certPEM, TLSCertKey: good[TLSCertKey], TLSKeyKey: good[TLSKeyKey]},
			want: []string{`the serving certificate (issued by "kruise-webhook-ca@`, `) does not chain to ca.crt ("kruise-webhook-ca@`, "certificate signed by unknown authority"},
		},
		{
			name: "expired",
			data: iss.secretData(t, t0.Add(-48*time.Hour), 24*time.Hour),
			want: []string{"the serving certificate expired at 2026-02-28T12:00:00Z"},
		},
		{
			name: "not yet valid",
			data: iss.secretData(t, t0.Add(time.Hour), 24*time.Hour),
			want: []string{"the serving certificate is not valid before 2026-03-01T12:55:00Z"},
		},
		{
			name: "wrong SAN",
			data: iss.secretData(t, t0.Add(-time.Hour), 24*time.Hour, "other-service.kruise-system.svc"),
			want: []string{"the serving certificate does not cover kruise-webhook-service.kruise-system.svc (it is for other-service.kruise-system.svc)"},
		},
		{
			name: "missing keys",
			data: map[string][]byte{TLSCertKey: good[TLSCertKey]},
			want: []string{"lacks the keys ca.crt, tls.key (cert-manager writes ca.crt, tls.crt and tls.key)"},
		},
		{
			name: "key of another certificate",
			data: map[string][]byte{ExternalCAKey: good[ExternalCAKey], TLSCertKey: good[TLSCertKey], TLSKeyKey: other.ca.keyPEM},
			want: []string{"tls.crt/tls.key are not a usable key pair"},
		},
		{
			name: "garbage ca.crt",
			data: map[string][]byte{ExternalCAKey: []byte("junk"), TLSCertKey: good[TLSCertKey], TLSKeyKey: good[TLSKeyKey]},
			want: []string{"ca.crt does not parse"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, append(injected(iss.ca.certPEM), externalSecret(tc.data))...)
			r := newReplica(t, c, newClock(), external)
			r.sync()
			assert.Empty(t, r.writes())
			err := r.Check(nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "Secret kruise-system/kruise-webhook-certs: ")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			events := gen.DrainEvents(r.recorder)
			require.Len(t, events, 1)
			assert.Contains(t, events[0], "Warning CertificateInvalid "+tc.want[0])
		})
	}
}

func TestExternalCABundleMismatchNamesTheObjectAndRecovers(t *testing.T) {
	iss := newIssuer(t)
	other := newIssuer(t)
	data := iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	objs := injected(iss.ca.certPEM)
	objs[0] = mutatingConfig(other.ca.certPEM) // cainjector has not caught up, or injects another Certificate's CA
	c := newCluster(t, append(objs, externalSecret(data))...)
	r := newReplica(t, c, newClock(), external)
	r.sync()

	assert.Empty(t, r.writes())
	err := r.Check(nil)
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, `MutatingWebhookConfiguration kruise-mutating-webhook-configuration: webhook "mpod.kb.io": caBundle ("kruise-webhook-ca@`)
	assert.Contains(t, msg, `does not trust the serving certificate, issued by "kruise-webhook-ca@`)
	assert.Contains(t, msg, `webhook "mcrr.kb.io"`)
	assert.Contains(t, msg, "cert-manager.io/inject-ca-from")
	assert.NotContains(t, msg, "Validating", "the other objects are fine")
	_, err = r.GetCertificate(nil)
	assert.NoError(t, err, "the certificate is served; readiness keeps the replica out of the Service")

	events := gen.DrainEvents(r.recorder)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], `Warning CABundleMismatch webhook "mpod.kb.io": caBundle`)

	// cainjector writes the right CA: ready again on the next check.
	fixed := c.mutating(t)
	for i := range fixed.Webhooks {
		fixed.Webhooks[i].ClientConfig.CABundle = iss.ca.certPEM
	}
	_, err = r.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(context.Background(), fixed, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.writes()
	r.sync()
	assert.NoError(t, r.Check(nil))
	assert.Empty(t, r.writes())
	events = gen.DrainEvents(r.recorder)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], `Normal CertificateProblemResolved resolved: webhook "mpod.kb.io"`)
}

func TestExternalCRDCABundleMismatchAndAnEmptyOne(t *testing.T) {
	iss := newIssuer(t)
	data := iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	objs := injected(iss.ca.certPEM)
	objs[2] = webhookCRD(convertingCRD, nil)
	c := newCluster(t, append(objs, externalSecret(data))...)
	r := newReplica(t, c, newClock(), external)
	r.sync()
	assert.Empty(t, c.crdWrites())
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CustomResourceDefinition nodeimages.apps.kruise.io: conversion webhook: caBundle is empty")
}

// A bundle holding more CAs than ca.crt (an operator adding the next CA
// ahead of a rotation) still trusts the serving certificate.
func TestExternalBundleWithMoreCAsIsAccepted(t *testing.T) {
	iss := newIssuer(t)
	next := newIssuer(t)
	data := iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	bundle := append(append([]byte{}, next.ca.certPEM...), iss.ca.certPEM...)
	c := newCluster(t, append(injected(bundle), externalSecret(data))...)
	r := newReplica(t, c, newClock(), external)
	r.sync()
	assert.NoError(t, r.Check(nil))
}

func TestExternalMissingSecretThenIssued(t *testing.T) {
	iss := newIssuer(t)
	c := newCluster(t, injected(iss.ca.certPEM)...)
	r := newReplica(t, c, newClock(), external)
	r.sync()
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Secret kruise-system/kruise-webhook-certs: does not exist: with EnableExternalCerts the certificates come from a Secret")
	assert.Empty(t, r.writes(), "no Secret is created in external mode")
	_, err = r.GetCertificate(nil)
	assert.Error(t, err)

	_, err = r.client.CoreV1().Secrets(testNS).Create(context.Background(),
		externalSecret(iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)), metav1.CreateOptions{})
	require.NoError(t, err)
	r.sync()
	assert.NoError(t, r.Check(nil))
}

// When cert-manager renews into a broken Secret, the replica keeps serving
// the last good certificate but is not ready; when the certificate it holds
// expires, Check says so even before the next check.
func TestExternalKeepsTheLastGoodCertificateAndExpiresIt(t *testing.T) {
	iss := newIssuer(t)
	clk := newClock()
	good := iss.secretData(t, t0.Add(-time.Hour), 2*time.Hour)
	c := newCluster(t, append(injected(iss.ca.certPEM), externalSecret(good))...)
	r := newReplica(t, c, clk, external, func(cfg *Config) { cfg.Resync = 24 * time.Hour })
	assert.Equal(t, time.Hour, r.sync(), "the next check is at the end of the certificate")
	require.NoError(t, r.Check(nil))

	sec := c.secret(t)
	sec.Data[TLSKeyKey] = nil
	_, err := r.client.CoreV1().Secrets(testNS).Update(context.Background(), sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.sync()
	require.Error(t, r.Check(nil))
	assert.Equal(t, good[TLSCertKey], pemOf(t, r.served(t)))

	clk.Step(time.Hour)
	err = r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the serving certificate expired at 2026-03-01T13:00:00Z")
}
