//go:build e2e

package helm

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	certutil "k8s.io/client-go/util/cert"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/certmanager"
	"github.com/nodekruise/kruise/test/e2e/framework"
	"github.com/nodekruise/kruise/test/proc"
)

const (
	nodeImageCRD = "nodeimages.apps.kruise.io"
	// certificate is the docs' Certificate (and its Secret): the seed's names.
	certificate = "kruise-webhook-certs"
	// switchTimeout bounds a helm upgrade's rollout, cert-manager's issuing and cainjector.
	switchTimeout = 4 * time.Minute
)

// The seed's external certificates on a real cluster: kruise installed with Helm and its own
// certificates is switched by `helm upgrade` to externalCerts (cainjector's annotation), and the
// Issuer and Certificate of docs/operations.md are applied unchanged, with cert-manager's own
// controllers and cainjector (cert-manager-lite) running against the cluster. Then: every replica
// rolls over and serves cert-manager's certificate; cainjector filled every caBundle, the CRD's
// conversion webhook's included, which the chart's setup hook annotated; cert-manager issued the
// Certificate once (no fight with the replicas being replaced); and the API server calls all three
// kinds of webhook through them (a pod mutated, a CRR refused, a v1alpha1 NodeImage converted).
// Then back, as docs/operations.md says: the Certificate and the Secret deleted, externalCerts off;
// kruise issues its own certificates again and removes cainjector's annotation from the CRD.
func TestSwitchToCertManagerAndBack(t *testing.T) {
	cmBin, cmCRDs := certmanager.Binary(t)
	if cmBin == "" {
		t.Fatal("KRUISE_CERT_MANAGER is not set: run this test with `make e2e-helm`, which builds cert-manager-lite")
	}
	f := framework.New(t)
	ctx := framework.Context(t, 15*time.Minute)
	crds, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc := f.Dynamic(t)
	helm := framework.Helm(ctx, t)
	ns := f.NewNamespace(ctx, t, "external-certs")
	f.WaitControllerRolledOut(ctx, t, switchTimeout)

	// cert-manager: its CRDs (removed at the end, with what is left of them) and its controllers.
	names := certmanager.InstallCRDs(ctx, t, crds, cmCRDs)
	t.Cleanup(func() {
		for _, n := range names {
			if err := crds.ApiextensionsV1().CustomResourceDefinitions().Delete(context.WithoutCancel(ctx), n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting cert-manager's CRD %s: %v", n, err)
			}
		}
	})
	cm := certmanager.Start(t, cmBin, os.Getenv("KUBECONFIG"), filepath.Join(t.TempDir(), "cert-manager-lite.log"))

	// To cert-manager. If the test stops half-way, the release still goes back.
	switched := true
	t.Cleanup(func() {
		if switched {
			switchBack(context.WithoutCancel(ctx), t, f, helm)
		}
	})
	helm("upgrade", "kruise", framework.ChartDir(t), "--namespace", "default", "--reuse-values", "--timeout", "3m",
		"--set", "externalCerts.enabled=true",
		"--set", `externalCerts.annotations.cert-manager\.io/inject-ca-from=`+framework.KruiseNamespace+"/"+certificate)
	certmanager.Apply(ctx, t, dc, certmanager.DocsYAML(t, certmanager.DocsHeading, 0))
	pods := f.WaitControllerRolledOut(ctx, t, switchTimeout)
	if err := proc.Running(cm); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if !slices.ContainsFunc(p.Spec.Containers[0].Args, func(a string) bool {
			return strings.HasPrefix(a, "--feature-gates=") && strings.Contains(a, "EnableExternalCerts=true")
		}) {
			t.Fatalf("controller pod %s runs without EnableExternalCerts: %v", p.Name, p.Spec.Containers[0].Args)
		}
	}

	secret, err := f.Client.CoreV1().Secrets(framework.KruiseNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := secret.Annotations[certs.CertManagerCertificateAnnotation]; got != certificate {
		t.Fatalf("Secret %s was not issued by cert-manager's Certificate %s (annotation %s=%q)", certs.SecretName, certificate, certs.CertManagerCertificateAnnotation, got)
	}
	ca := secret.Data[certs.ExternalCAKey]
	leaf := parseLeaf(t, secret.Data[certs.TLSCertKey])
	t.Logf("switched: %d replicas with EnableExternalCerts; Secret %s issued by Certificate %s: serial %s, issuer %q",
		len(pods), certs.SecretName, certificate, leaf.SerialNumber.Text(16), leaf.Issuer.CommonName)
	framework.WaitWebhookServes(ctx, t, pods, leaf)
	framework.WaitFor(ctx, t, time.Minute, "cainjector's CA in every caBundle, the CRD's included", func(ctx context.Context) (bool, string, error) {
		missing, err := bundlesWithout(ctx, f, crds, ca)
		return len(missing) == 0, "without it: " + strings.Join(missing, ", "), err
	})
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, nodeImageCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := crd.Annotations[certmanager.InjectAnnotation]; got != framework.KruiseNamespace+"/"+certificate {
		t.Errorf("CRD %s: annotation %s=%q, want the chart's externalCerts.annotations", nodeImageCRD, certmanager.InjectAnnotation, got)
	}
	// Issued once: the replicas being replaced (kruise's own certificates) never wrote the Secret
	// back, which would have made cert-manager issue again.
	cert, err := dc.Resource(certmanager.Resources["Certificate"]).Namespace(framework.KruiseNamespace).Get(ctx, certificate, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev, _, _ := unstructured.NestedInt64(cert.Object, "status", "revision"); rev != 1 {
		t.Errorf("Certificate %s is at revision %d: cert-manager issued it more than once (a fight over the Secret?)", certificate, rev)
	}

	requireWebhooksCalled(ctx, t, f, ns, "external")
	t.Logf("external: every caBundle holds cainjector's CA, the CRD is annotated %s, and the API server called all three webhooks", certmanager.InjectAnnotation)

	// And back to kruise's own certificates.
	switched = false
	switchBack(ctx, t, f, helm)
	framework.WaitFor(ctx, t, 2*time.Minute, "kruise's own CA in every caBundle and cainjector's annotation gone", func(ctx context.Context) (bool, string, error) {
		s, err := f.Client.CoreV1().Secrets(framework.KruiseNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		if _, ok := s.Annotations[certs.CertManagerCertificateAnnotation]; ok || len(s.Data[certs.CACertKey]) == 0 {
			return false, "Secret " + certs.SecretName + " is not kruise's own yet", nil
		}
		missing, err := bundlesWithout(ctx, f, crds, s.Data[certs.CACertKey])
		if err != nil || len(missing) > 0 {
			return false, "without kruise's CA: " + strings.Join(missing, ", "), err
		}
		annotated, err := injectAnnotated(ctx, f, crds)
		return len(annotated) == 0, "still annotated for cainjector: " + strings.Join(annotated, ", "), err
	})
	requireWebhooksCalled(ctx, t, f, ns, "managed")
	t.Logf("back: kruise's own CA in every caBundle, nothing annotated for cainjector, and the API server called all three webhooks")
}

// switchBack puts the release back on kruise's own certificates, as docs/operations.md says: the
// Certificate (and Issuer) deleted first, so that cert-manager stops writing the Secret, then the
// Secret, then externalCerts off; and waits for the rollout.
func switchBack(ctx context.Context, t *testing.T, f *framework.Framework, helm func(...string) string) {
	t.Helper()
	dc := f.Dynamic(t)
	for _, kind := range []string{"Certificate", "Issuer"} {
		list, err := dc.Resource(certmanager.Resources[kind]).Namespace(framework.KruiseNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("listing %ss: %v", kind, err)
			continue
		}
		for _, o := range list.Items {
			if err := dc.Resource(certmanager.Resources[kind]).Namespace(framework.KruiseNamespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", kind, o.GetName(), err)
			}
		}
	}
	if err := f.Client.CoreV1().Secrets(framework.KruiseNamespace).Delete(ctx, certs.SecretName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting Secret %s: %v", certs.SecretName, err)
	}
	helm("upgrade", "kruise", framework.ChartDir(t), "--namespace", "default", "--reuse-values", "--timeout", "3m",
		"--set", "externalCerts.enabled=false")
	f.WaitControllerRolledOut(ctx, t, switchTimeout)
}

// requireWebhooksCalled checks that the API server calls each kind of kruise webhook and trusts
// it: a marked pod is mutated, a CRR for a missing pod is refused by the validating webhook, and a
// v1alpha1 read of the node's NodeImage (stored as v1beta1) is converted.
func requireWebhooksCalled(ctx context.Context, t *testing.T, f *framework.Framework, ns, phase string) {
	t.Helper()
	f.RequirePodWebhookMutates(ctx, t, ns, "marked-"+phase)
	kc := f.KruiseClient(t)
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "missing-pod-" + phase, Namespace: ns},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{PodName: "nope",
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}}},
	}
	_, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `pod "nope" not found`) {
		t.Errorf("%s: a CRR for a missing pod: got %v, want the validating webhook's refusal", phase, err)
	}
	framework.WaitFor(ctx, t, time.Minute, phase+": a v1alpha1 read of NodeImage "+framework.NodeName()+" converted", func(ctx context.Context) (bool, string, error) {
		if _, err := kc.AppsV1alpha1().NodeImages().Get(ctx, framework.NodeName(), metav1.GetOptions{}); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

// bundlesWithout names the caBundles (each webhook of both configurations, and NodeImage's
// conversion webhook) that do not hold ca.
func bundlesWithout(ctx context.Context, f *framework.Framework, crds apiextensionsclient.Interface, ca []byte) ([]string, error) {
	if len(ca) == 0 {
		return nil, errors.New("no CA to look for")
	}
	var out []string
	check := func(where string, bundle []byte) {
		if !bytes.Contains(bundle, bytes.TrimSpace(ca)) {
			out = append(out, where)
		}
	}
	m, err := f.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		return nil, framework.Retry(err)
	}
	for _, w := range m.Webhooks {
		check("mutating webhook "+w.Name, w.ClientConfig.CABundle)
	}
	v, err := f.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		return nil, framework.Retry(err)
	}
	for _, w := range v.Webhooks {
		check("validating webhook "+w.Name, w.ClientConfig.CABundle)
	}
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, nodeImageCRD, metav1.GetOptions{})
	if err != nil {
		return nil, framework.Retry(err)
	}
	if conv := crd.Spec.Conversion; conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		out = append(out, "CRD "+nodeImageCRD+" (no conversion webhook)")
	} else {
		check("CRD "+nodeImageCRD, conv.Webhook.ClientConfig.CABundle)
	}
	return out, nil
}

// injectAnnotated names the objects kruise keeps a caBundle in that are annotated for cainjector.
func injectAnnotated(ctx context.Context, f *framework.Framework, crds apiextensionsclient.Interface) ([]string, error) {
	var out []string
	var metas []metav1.ObjectMeta
	m, err := f.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		return nil, framework.Retry(err)
	}
	v, err := f.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		return nil, framework.Retry(err)
	}
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, nodeImageCRD, metav1.GetOptions{})
	if err != nil {
		return nil, framework.Retry(err)
	}
	metas = append(metas, m.ObjectMeta, v.ObjectMeta, crd.ObjectMeta)
	for _, om := range metas {
		if _, ok := om.Annotations[certmanager.InjectAnnotation]; ok {
			out = append(out, om.Name)
		}
	}
	return out, nil
}

func parseLeaf(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	parsed, err := certutil.ParseCertsPEM(pemData)
	if err != nil {
		t.Fatalf("parsing %s of Secret %s: %v", certs.TLSCertKey, certs.SecretName, err)
	}
	return parsed[0]
}
