package certs

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// A check that loads a new serving certificate verifies the caBundles
// after loading it; until that check ends, readiness must not answer with
// the verdict on the previous certificate. cert-manager re-issuing with a
// SelfSigned Issuer makes a new CA that cainjector injects only later: the
// new certificate is served at once and is not trusted yet.
func TestExternalNewCertificateIsNotReadyBeforeItsBundlesAreChecked(t *testing.T) {
	iss := newIssuer(t)
	data := iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	c := newCluster(t, append(injected(iss.ca.certPEM), externalSecret(data))...)
	r := newReplica(t, c, newClock(), external)
	r.sync()
	require.NoError(t, r.Check(nil))

	// Re-issued by another CA, not injected yet.
	renewed := newIssuer(t).secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)
	sec := c.secret(t)
	sec.Data = renewed
	_, err := r.client.CoreV1().Secrets(testNS).Update(context.Background(), sec, metav1.UpdateOptions{})
	require.NoError(t, err)

	// Readiness as a probe would see it while the check reads the
	// configurations, after the new certificate was loaded.
	var during []error
	r.client.PrependReactor("get", "mutatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		during = append(during, r.Check(nil))
		return false, nil, nil
	})
	r.sync()

	require.NotEmpty(t, during, "the check reads the mutating configuration")
	served := r.served(t)
	assert.Equal(t, renewed[TLSCertKey], pemOf(t, served), "the re-issued certificate is served")
	for _, err := range during {
		assert.Error(t, err, "not ready while the new certificate's caBundles are being checked")
	}
	assert.ErrorContains(t, r.Check(nil), "does not trust the serving certificate")
}
