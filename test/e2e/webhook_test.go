//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// webhookHost is the name the API server checks the serving certificate against.
const webhookHost = certs.ServiceName + "." + framework.KruiseNamespace + ".svc"

// The local install serves the admission webhooks: every kruise-controller replica is Ready, its
// /readyz lists the webhook server and the certificate manager among its passing checks (they fail
// it until the certificate is valid and trusted by the configurations: pkg/webhook/certs unit
// tests), Secret kruise-webhook-certs holds OpenKruise's keys, every webhook of both configurations
// carries a caBundle that verifies the serving certificate, and each replica serves that very
// certificate on :9876 of its pod address.
func TestWebhooksServed(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)

	var pods []string
	framework.WaitFor(ctx, t, 2*time.Minute, "every kruise-controller replica Ready with the webhook checks passing",
		func(ctx context.Context) (bool, string, error) {
			list, err := f.ControllerPods(ctx)
			if err != nil {
				return false, "", err
			}
			pods = pods[:0]
			var seen []string
			for _, p := range list {
				if p.DeletionTimestamp != nil {
					continue
				}
				if !framework.PodReady(&p) {
					return false, p.Name + " not Ready", nil
				}
				r, err := framework.ControllerReadyz(ctx, p.Name)
				if err != nil {
					return false, "", framework.Retry(err)
				}
				for _, check := range []string{"webhook", "webhook-certificates"} {
					line, passed, found := r.Check(check)
					if !found || !passed || !r.OK {
						return false, fmt.Sprintf("%s: check %q: %q; %s", p.Name, check, line, r), nil
					}
					seen = append(seen, p.Name+": "+line)
				}
				pods = append(pods, p.Name)
			}
			return len(pods) > 0, strings.Join(seen, "; "), nil
		})

	secret, err := f.Client.CoreV1().Secrets(framework.KruiseNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Secret %s: %v", certs.SecretName, err)
	}
	for _, key := range []string{certs.CACertKey, certs.CAKeyKey, certs.ServerCertKey, certs.ServerKeyKey, certs.TLSCertKey, certs.TLSKeyKey} {
		if len(secret.Data[key]) == 0 {
			t.Errorf("Secret %s has no %s (OpenKruise's keys): has %v", certs.SecretName, key, keysOf(secret.Data))
		}
	}
	serving := parseCert(t, "Secret "+certs.SecretName+" "+certs.ServerCertKey, secret.Data[certs.ServerCertKey])
	if !strings.Contains(string(secret.Data[certs.TLSCertKey]), strings.TrimSpace(string(pemOf(serving)))) {
		t.Errorf("Secret %s: %s does not hold the certificate of %s", certs.SecretName, certs.TLSCertKey, certs.ServerCertKey)
	}
	verifyAgainst(t, "Secret's "+certs.CACertKey, secret.Data[certs.CACertKey], serving)

	mwc, err := f.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s: %v", certs.MutatingWebhookConfigurationName, err)
	}
	if len(mwc.Webhooks) == 0 {
		t.Fatalf("%s has no webhook", mwc.Name)
	}
	var bundle []byte
	for _, w := range mwc.Webhooks {
		verifyAgainst(t, mwc.Name+" webhook "+w.Name, w.ClientConfig.CABundle, serving)
		bundle = w.ClientConfig.CABundle
	}
	vwc, err := f.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s: %v", certs.ValidatingWebhookConfigurationName, err)
	}
	// The validating webhooks of kruise's own kinds (the jobs' included) carry the CA too, the
	// PodUnavailableBudget and WorkloadSpread ones and deletion protection's (the local cluster runs with ResourcesDeletionProtection). The
	// order is not compared: the API server calls validating webhooks in parallel.
	var validating []string
	for _, w := range vwc.Webhooks {
		validating = append(validating, w.Name)
	}
	slices.Sort(validating)
	if want := []string{"vadvancedcronjob.kb.io", "vbroadcastjob.kb.io", "vcloneset.kb.io", "vcontainerrecreaterequest.kb.io", "vdaemonset.kb.io",
		"vdeletionprotection.kb.io", "vephemeraljob.kb.io", "vimagelistpulljob-v1beta1.kb.io", "vimagepulljob-v1beta1.kb.io", "vpersistentpodstate.kb.io", "vpod.kb.io", "vpodeviction.kb.io", "vpodprobemarker.kb.io", "vpodunavailablebudget.kb.io", "vresourcedistribution.kb.io", "vsidecarset.kb.io", "vstatefulset.kb.io",
		"vuniteddeployment.kb.io", "vworkloadspread-eviction.kb.io", "vworkloadspread-pod.kb.io", "vworkloadspread.kb.io"}; !slices.Equal(validating, want) {
		t.Errorf("%s has webhooks %v, want %v", vwc.Name, validating, want)
	}
	for _, w := range vwc.Webhooks {
		verifyAgainst(t, vwc.Name+" webhook "+w.Name, w.ClientConfig.CABundle, serving)
	}
	t.Logf("%s: %d webhook(s), %s: %d; serving certificate %q valid until %s",
		mwc.Name, len(mwc.Webhooks), vwc.Name, len(vwc.Webhooks), serving.Subject.CommonName, serving.NotAfter.Format(time.RFC3339))

	// What the API server sees: each replica's :9876 presents a certificate the caBundle trusts
	// for the Service's name.
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatalf("%s: caBundle holds no PEM certificate", mwc.Name)
	}
	list, err := f.ControllerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if !slices.Contains(pods, p.Name) || p.Status.PodIP == "" {
			continue
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: roots, ServerName: webhookHost, MinVersion: tls.VersionTLS12}}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, "9876"))
		if err != nil {
			t.Errorf("TLS to %s at %s:9876 with the configuration's caBundle: %v", p.Name, p.Status.PodIP, err)
			continue
		}
		got := conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
		_ = conn.Close()
		if !got.Equal(serving) {
			t.Errorf("%s serves certificate %s (serial %s), the Secret holds serial %s", p.Name, got.Subject.CommonName, got.SerialNumber, serving.SerialNumber)
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func parseCert(t *testing.T, what string, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", what)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return c
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// verifyAgainst checks that the PEM bundle verifies the serving certificate for the Service's
// name, as the API server does.
func verifyAgainst(t *testing.T, what string, bundle []byte, serving *x509.Certificate) {
	t.Helper()
	if len(bundle) == 0 {
		t.Errorf("%s: no caBundle", what)
		return
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Errorf("%s: caBundle holds no PEM certificate", what)
		return
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: webhookHost, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("%s: the caBundle does not verify the serving certificate: %v", what, err)
	}
}
