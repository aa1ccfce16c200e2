package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/certmanager"
	"github.com/nodekruise/kruise/test/proc"
)

const (
	cmNamespace     = "kruise-system"
	cmConvertingCRD = "nodeimages.apps.kruise.io"
	// cmCertificate is the Certificate of docs/operations.md (named as its Secret).
	cmCertificate = "kruise-webhook-certs"
	// issueTimeout bounds cert-manager's issuing and injecting, and kruise noticing it.
	issueTimeout = 2 * time.Minute
)

// A second Certificate of another self-signed CA, for the same names: the CA of a configuration
// annotated with it does not trust kruise's serving certificate.
const otherCertificate = `
apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: other-selfsigned
  namespace: kruise-system
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: other-certs
  namespace: kruise-system
spec:
  secretName: other-certs
  dnsNames:
    - kruise-webhook-service.kruise-system.svc
  issuerRef:
    name: other-selfsigned
`

// TestExternalCertsWithCertManager runs kruise's certificate manager in external mode against
// cert-manager's own controllers and cainjector (cert-manager-lite, built from the cert-manager
// module), with the webhook configurations the chart renders for externalCerts and the Issuer
// and Certificate of docs/operations.md, unchanged: kruise becomes ready once cert-manager has
// issued the Secret and injected the CA; a configuration injected with another CA makes it
// unready with an Event and a log line naming the configuration, and ready again once fixed; a
// re-issue by cert-manager is served without a restart.
func TestExternalCertsWithCertManager(t *testing.T) {
	t.Parallel()
	bin, crdDir := certmanager.Binary(t)
	if bin == "" {
		t.Skip("KRUISE_CERT_MANAGER is not set: build cert-manager-lite with hack/build-certmanager.sh " +
			"and set it to the path it prints (make test-integration does both)")
	}
	helmForTest(t)
	c := startCluster(t)
	cs, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	dc, err := dynamic.NewForConfig(c.config)
	require.NoError(t, err)

	certmanager.InstallCRDs(context.Background(), t, c.apiext, crdDir)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, c.config, kubeconfig)
	cmProc := certmanager.Start(t, bin, kubeconfig, filepath.Join(dir, "cert-manager-lite.log"))

	hooks := applyChartWebhookObjects(t, cs, cmNamespace, "webhook.enabled=true", "externalCerts.enabled=true",
		`externalCerts.annotations.cert-manager\.io/inject-ca-from=kruise-system/kruise-webhook-certs`)
	// The chart's post-install hook: NodeImage's CRD converts through kruise, annotated for cainjector.
	runConversionHook(t, hooks["kruise-conversion-setup"], kubeconfig, cmNamespace)
	certmanager.Apply(context.Background(), t, dc, certmanager.DocsYAML(t, certmanager.DocsHeading, 0))

	// The manager's log goes to the test's log and to a buffer the test reads.
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	m, err := certs.New(certs.Config{
		Mode: certs.ModeExternal, Namespace: cmNamespace,
		Client: cs, CRDClient: c.apiext, CRDs: []string{cmConvertingCRD},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitManager := func(what string, cond func(checkErr error) bool) {
		t.Helper()
		waitManagerWith(t, m, done, cmProc, what, cond)
	}

	// Ready once cert-manager issued the Secret and cainjector filled every caBundle.
	waitManager("ready with cert-manager's Secret and caBundles", func(checkErr error) bool { return checkErr == nil })
	secret, err := cs.CoreV1().Secrets(cmNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	for _, k := range []string{certs.ExternalCAKey, certs.TLSCertKey, certs.TLSKeyKey} {
		require.NotEmpty(t, secret.Data[k], "cert-manager's Secret lacks %s", k)
	}
	ca := secret.Data[certs.ExternalCAKey]
	require.Equal(t, ca, m.CABundle(), "kruise serves with the Secret's ca.crt")
	requireCABundles(t, ctx, c, cs, ca)
	requireHandshake(t, m, ca)

	// The mutating configuration without the annotation and with another Certificate's CA (a
	// different self-signed CA), as a user might set it by hand: cainjector leaves it alone, the CA
	// does not trust kruise's certificate. kruise is unready, with an Event and a log line naming
	// the configuration; no crash.
	certmanager.Apply(context.Background(), t, dc, otherCertificate)
	var otherCA []byte
	waitFor(t, "Secret other-certs issued", func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(cmNamespace).Get(ctx, "other-certs", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		otherCA = s.Data[certs.ExternalCAKey]
		return len(otherCA) > 0, nil
	})
	const mutating = certs.MutatingWebhookConfigurationName
	// A reconcile cainjector queued before the change may still write the bundle it read from its
	// cache: the configuration is set again until it stays so.
	waitManager("unready naming the mutating configuration", func(checkErr error) bool {
		setMutatingCA(t, cs, otherCA)
		return checkErr != nil && strings.Contains(checkErr.Error(), "MutatingWebhookConfiguration "+mutating)
	})
	const distrust = "does not trust the serving certificate"
	waitEvent(t, cs, mutating, certs.ReasonCABundleMismatch, distrust)
	logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	require.Regexp(t, `Webhook certificate problem[^\n]*object="`+mutating+`"[^\n]*reason="`+
		certs.ReasonCABundleMismatch+`"[^\n]*`+distrust, logged)

	// Annotated again, cainjector adds the Certificate's CA (it merges a CA into the bundle rather
	// than replacing it): ready again.
	annotateMutating(t, cs, mutating, cmNamespace+"/"+cmCertificate)
	waitManager("ready again once the right CA is injected", func(checkErr error) bool { return checkErr == nil })
	waitEvent(t, cs, mutating, certs.ReasonProblemResolved, distrust)

	// Re-issue as `cmctl renew` does it: the Certificate's Issuing condition. cert-manager writes a
	// new key and certificate (a new self-signed CA) and cainjector the new CA; kruise serves the
	// new certificate at the next handshake.
	oldLeaf := parseLeaf(t, secret.Data[certs.TLSCertKey])
	renewCertificate(t, dc, cmNamespace, cmCertificate)
	waitManager("serving the re-issued certificate", func(checkErr error) bool {
		cert, err := m.GetCertificate(nil)
		return checkErr == nil && err == nil && cert.Leaf.SerialNumber.Cmp(oldLeaf.SerialNumber) != 0 &&
			trustedByAPI(c, cs, m)
	})
	secret, err = cs.CoreV1().Secrets(cmNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	newCA := secret.Data[certs.ExternalCAKey]
	require.NotEqual(t, ca, newCA, "a re-issued self-signed certificate is a new CA")
	require.Equal(t, newCA, m.CABundle())
	requireCABundles(t, ctx, c, cs, newCA)
	requireHandshake(t, m, newCA)
	require.Error(t, handshake(m, ca), "the old CA no longer trusts what is served")

	// The CA Issuer of docs/operations.md: once the Certificate is signed by it, a renewal keeps
	// the CA, and so the caBundles.
	certmanager.Apply(context.Background(), t, dc, certmanager.DocsYAML(t, certmanager.DocsHeading, 1))
	setIssuer(t, dc, cmNamespace, cmCertificate, "kruise-ca")
	waitManager("serving a certificate of the CA Issuer", func(checkErr error) bool {
		cert, err := m.GetCertificate(nil)
		return checkErr == nil && err == nil && cert.Leaf.Issuer.CommonName == "kruise-webhook-ca" &&
			trustedByAPI(c, cs, m)
	})
	caOfIssuer := m.CABundle()
	leaf, err := m.GetCertificate(nil)
	require.NoError(t, err)
	mwcBefore, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mutating, metav1.GetOptions{})
	require.NoError(t, err)
	renewCertificate(t, dc, cmNamespace, cmCertificate)
	waitManager("serving the certificate renewed by the CA Issuer", func(checkErr error) bool {
		cert, err := m.GetCertificate(nil)
		return checkErr == nil && err == nil && cert.Leaf.SerialNumber.Cmp(leaf.Leaf.SerialNumber) != 0 &&
			trustedByAPI(c, cs, m)
	})
	// Renewed by a CA Issuer: the same CA signs the new certificate, so the CA bundles written
	// before still trust it and nothing has to change in the configurations. (The bytes of
	// ca.crt may differ between issuances, so the CA is compared, not the bundle's text.)
	renewed, err := m.GetCertificate(nil)
	require.NoError(t, err)
	require.Equal(t, leaf.Leaf.AuthorityKeyId, renewed.Leaf.AuthorityKeyId, "renewed by a CA Issuer: same CA")
	requireHandshake(t, m, caOfIssuer)
	requireHandshake(t, m, mwcBefore.Webhooks[0].ClientConfig.CABundle)

	// helm uninstall's pre-delete hook: the CRD converts with strategy None again and carries no
	// annotation for cainjector (which would otherwise keep writing into it).
	runConversionHook(t, hooks["kruise-conversion-reset"], kubeconfig, cmNamespace)
	crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, cmConvertingCRD, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "None", string(crd.Spec.Conversion.Strategy))
	require.NotContains(t, crd.Annotations, certmanager.InjectAnnotation)
}

// setIssuer points a Certificate at another Issuer; cert-manager then issues it again.
func setIssuer(t *testing.T, dc dynamic.Interface, namespace, name, issuer string) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"spec": map[string]any{"issuerRef": map[string]any{"name": issuer}}})
	require.NoError(t, err)
	_, err = dc.Resource(certmanager.Resources["Certificate"]).Namespace(namespace).Patch(context.Background(), name, types.MergePatchType, raw, metav1.PatchOptions{})
	require.NoError(t, err)
}

// setMutatingCA removes the cainjector annotation from the mutating configuration and sets the
// caBundle of each of its webhooks to ca, unless it is so already.
func setMutatingCA(t *testing.T, cs kubernetes.Interface, ca []byte) {
	t.Helper()
	ctx := context.Background()
	mwcs := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mwc, err := mwcs.Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_, annotated := mwc.Annotations[certmanager.InjectAnnotation]
		changed := annotated
		delete(mwc.Annotations, certmanager.InjectAnnotation)
		for i := range mwc.Webhooks {
			changed = changed || !bytes.Equal(mwc.Webhooks[i].ClientConfig.CABundle, ca)
			mwc.Webhooks[i].ClientConfig.CABundle = ca
		}
		if !changed {
			return nil
		}
		_, err = mwcs.Update(ctx, mwc, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
}

func annotateMutating(t *testing.T, cs kubernetes.Interface, name, certificate string) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{certmanager.InjectAnnotation: certificate}}})
	require.NoError(t, err)
	_, err = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(context.Background(), name, types.MergePatchType, raw, metav1.PatchOptions{})
	require.NoError(t, err)
}

// renewCertificate sets the Issuing condition on a Certificate's status, which is how cmctl renew
// asks cert-manager to issue it again.
func renewCertificate(t *testing.T, dc dynamic.Interface, namespace, name string) {
	t.Helper()
	certificates := dc.Resource(certmanager.Resources["Certificate"]).Namespace(namespace)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		cert, err := certificates.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
		conds = append(conds, map[string]any{
			"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
			"message":            "Certificate re-issuance manually triggered",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		})
		require.NoError(t, unstructured.SetNestedSlice(cert.Object, conds, "status", "conditions"))
		_, err = certificates.UpdateStatus(ctx, cert, metav1.UpdateOptions{})
		return err == nil, nil // a conflict with cert-manager's own status writes: read again
	})
	require.NoError(t, err, "setting the Issuing condition of Certificate %s/%s", namespace, name)
}

// waitManagerWith waits until cond holds for the Manager's readiness check, failing with the last
// check's answer; neither Run nor cert-manager-lite may end meanwhile.
func waitManagerWith(t *testing.T, m *certs.Manager, done <-chan error, cm *exec.Cmd, what string, cond func(checkErr error) bool) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, issueTimeout, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("the certificate manager stopped: %v", err)
		default:
		}
		if err := proc.Running(cm); err != nil {
			return false, err
		}
		last = m.Check(nil)
		return cond(last), nil
	})
	require.NoError(t, err, "waiting for the certificate manager to be %s; last check: %v", what, last)
}

// waitEvent waits for an Event with reason on the cluster-scoped object name whose message
// contains message.
func waitEvent(t *testing.T, cs kubernetes.Interface, name, reason, message string) {
	t.Helper()
	waitFor(t, "Event "+reason+" on "+name, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + name + ",reason=" + reason,
		})
		if err != nil {
			return false, nil
		}
		for _, e := range list.Items {
			if strings.Contains(e.Message, message) {
				return true, nil
			}
		}
		return false, nil
	})
}

// requireCABundles checks that cainjector put ca into every webhook of the mutating configuration
// and into the conversion webhook of the CRD. It merges a new CA into a bundle (its feature
// CAInjectorMerging, GA), so the bundle holds ca and may hold CAs injected before.
func requireCABundles(t *testing.T, ctx context.Context, c *cluster, cs kubernetes.Interface, ca []byte) {
	t.Helper()
	mwc, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, mwc.Webhooks)
	for _, w := range mwc.Webhooks {
		require.Contains(t, string(w.ClientConfig.CABundle), string(bytes.TrimSpace(ca)), "caBundle of webhook %s", w.Name)
	}
	crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, cmConvertingCRD, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, string(crd.Spec.Conversion.Webhook.ClientConfig.CABundle), string(bytes.TrimSpace(ca)), "caBundle of CRD %s", cmConvertingCRD)
}

// trustedByAPI says whether the caBundles the API server holds (the mutating configuration's
// webhooks and the CRD's conversion webhook) trust what the Manager serves now, in a TLS
// handshake: a check of the outcome independent of the Manager's own.
func trustedByAPI(c *cluster, cs kubernetes.Interface, m *certs.Manager) bool {
	ctx := context.Background()
	mwc, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		return false
	}
	bundles := [][]byte{}
	for _, w := range mwc.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, cmConvertingCRD, metav1.GetOptions{})
	if err != nil || crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
		return false
	}
	bundles = append(bundles, crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
	for _, b := range bundles {
		if handshake(m, b) != nil {
			return false
		}
	}
	return true
}

// requireHandshake serves with the Manager's certificate on loopback and connects as the API
// server would for Service kruise-webhook-service, trusting ca.
func requireHandshake(t *testing.T, m *certs.Manager, ca []byte) {
	t.Helper()
	require.NoError(t, handshake(m, ca))
}

func handshake(m *certs.Manager, ca []byte) error {
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: m.GetCertificate, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		_ = conn.(*tls.Conn).Handshake()
		_ = conn.Close()
	}()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("no certificate in the CA bundle")
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", l.Addr().String(), &tls.Config{
		RootCAs: pool, ServerName: certs.ServiceHost(certs.ServiceName, cmNamespace), MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		return err
	}
	return conn.Close()
}

func parseLeaf(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	certsIn, err := certutil.ParseCertsPEM(pemData)
	require.NoError(t, err)
	return certsIn[0]
}
