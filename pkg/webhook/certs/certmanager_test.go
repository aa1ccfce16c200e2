package certs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// cmIssue makes the Secret look as cert-manager leaves it when a Certificate
// names it: its annotation, and its own ca.crt, tls.crt and tls.key over
// whatever was there (kruise's other keys stay).
func cmIssue(t *testing.T, r *replica, iss *issuer) {
	t.Helper()
	sec, err := r.client.CoreV1().Secrets(testNS).Get(context.Background(), SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	if sec.Annotations == nil {
		sec.Annotations = map[string]string{}
	}
	sec.Annotations[CertManagerCertificateAnnotation] = SecretName
	for k, v := range iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour) {
		sec.Data[k] = v
	}
	_, err = r.client.CoreV1().Secrets(testNS).Update(context.Background(), sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.client.ClearActions()
}

// A replica with kruise's own certificates, running while the install is
// switched to cert-manager: it writes neither the Secret cert-manager now
// issues nor a caBundle cainjector fills, and keeps serving its own
// certificate (ready while the caBundles still trust it), saying why once.
func TestManagedLeavesCertManagersSecretAndInjectedBundlesAlone(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk)
	r.sync()
	own := r.served(t)
	ownCA := r.CABundle()
	r.writes()
	c.crdWrites()
	gen.DrainEvents(r.recorder)

	iss := newIssuer(t)
	cmIssue(t, r, iss)
	// helm upgrade annotated the configuration; cainjector added its CA to the bundle.
	mwc := c.mutating(t)
	mwc.Annotations = map[string]string{"cert-manager.io/inject-ca-from": testNS + "/" + SecretName}
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].ClientConfig.CABundle = append(append([]byte{}, ownCA...), iss.ca.certPEM...)
	}
	_, err := r.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(context.Background(), mwc, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.client.ClearActions()

	for range 3 {
		clk.Step(time.Minute)
		r.sync()
	}
	assert.Empty(t, r.writes(), "nothing written: neither cert-manager's Secret nor cainjector's caBundle")
	assert.Empty(t, c.crdWrites())
	assert.True(t, r.served(t).Equal(own), "still serving its own certificate")
	assert.NoError(t, r.Check(nil), "ready: the caBundles still trust what it serves")
	events := gen.DrainEvents(r.recorder)
	assert.Equal(t, []string{"Warning SecretIssuedByCertManager " +
		"is issued by cert-manager (Certificate " + testNS + "/" + SecretName + "), so kruise, with its own certificates, does not write it: " +
		"run with EnableExternalCerts (Helm externalCerts.enabled=true), or delete the Certificate and then the Secret for kruise to issue its own; " +
		"until then kruise serves its own certificate from cert.pem/key.pem"}, warningsOf(events), "one Event, not one per check")

	// cainjector replaces the bundle with its CA only: kruise's certificate is no longer
	// trusted; still nothing written, unready with the reason on the configuration.
	mwc = c.mutating(t)
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].ClientConfig.CABundle = iss.ca.certPEM
	}
	_, err = r.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(context.Background(), mwc, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.client.ClearActions()
	r.sync()
	assert.Empty(t, r.writes())
	err = r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MutatingWebhookConfiguration "+MutatingWebhookConfigurationName)
	assert.Contains(t, err.Error(), "the object is annotated cert-manager.io/inject-ca-from: "+testNS+"/"+SecretName+", so cainjector writes its caBundle")
}

// A Secret issued by cert-manager that holds no certificate of kruise's own
// (kruise installed with its own certificates beside a Certificate for the
// same Secret): kruise writes nothing and says what to do, unready.
func TestManagedRefusesToFightCertManagerForANewSecret(t *testing.T) {
	iss := newIssuer(t)
	sec := externalSecret(iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour))
	sec.Annotations = map[string]string{CertManagerCertificateAnnotation: "kruise-webhook-certs"}
	c := newCluster(t, append(targets(), sec)...)
	r := newReplica(t, c, newClock())
	r.sync()

	assert.Empty(t, r.writes())
	err := r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is issued by cert-manager (Certificate "+testNS+"/kruise-webhook-certs)")
	assert.Contains(t, err.Error(), "kruise's own certificate there is unusable: no CA yet")
}

// A CRD annotated for cainjector by someone else than kruise's set-up is
// verified, never written, with kruise's own certificates.
func TestManagedVerifiesACRDLeftToCAInjector(t *testing.T) {
	c := newCluster(t, mutatingConfig(nil), validatingConfig(nil), installedCRD(convertingCRD))
	r := newReplica(t, c, newClock())
	r.sync()
	c.crdWrites()
	ca := r.CABundle()

	crd := c.crd(t, convertingCRD)
	crd.Annotations["cert-manager.io/inject-ca-from"] = testNS + "/other"
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = append(append([]byte{}, ca...), newIssuer(t).ca.certPEM...)
	_, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.crdWrites()
	r.sync()
	assert.Empty(t, c.crdWrites())
	assert.NoError(t, r.Check(nil))

	crd = c.crd(t, convertingCRD)
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = newIssuer(t).ca.certPEM
	_, err = c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.crdWrites()
	r.sync()
	assert.Empty(t, c.crdWrites())
	err = r.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CustomResourceDefinition "+convertingCRD)
	assert.Contains(t, err.Error(), "does not trust the serving certificate")
}

// cert-manager may write the Secret's data as a whole, dropping kruise's keys: the replica keeps
// serving the certificate it holds.
func TestManagedKeepsServingWhatItHoldsWhenCertManagerReplacesTheData(t *testing.T) {
	clk := newClock()
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk)
	r.sync()
	own := r.served(t)
	r.writes()

	iss := newIssuer(t)
	sec := c.secret(t)
	sec.Annotations = map[string]string{CertManagerCertificateAnnotation: SecretName}
	sec.Data = iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	_, err := r.client.CoreV1().Secrets(testNS).Update(context.Background(), sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.client.ClearActions()

	clk.Step(time.Minute)
	r.sync()
	assert.Empty(t, r.writes())
	assert.True(t, r.served(t).Equal(own))
	assert.NoError(t, r.Check(nil))
	assert.Contains(t, strings.Join(gen.DrainEvents(r.recorder), "\n"), "until then kruise serves its own certificate that it holds")
}
