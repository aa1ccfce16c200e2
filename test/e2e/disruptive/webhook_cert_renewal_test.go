//go:build e2e

package disruptive

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// renewalValidity is the serving certificate validity the test runs the controller with: the
// shortest the flag takes, so a renewal (after two thirds of the life) comes within a minute.
const renewalValidity = certs.MinCertValidity

// A serving certificate is renewed before it expires, without a restart, under the same CA. The
// controller runs with --webhook-cert-validity at its minimum; its serving certificate (cert.pem,
// key.pem) is then removed from Secret kruise-webhook-certs so that the next one is issued with that validity (the
// CA stays; a CA-signed certificate still valid is adopted, never replaced early). Then: tls.crt is
// replaced by a new certificate before the old one expires, every replica serves the new one on
// its webhook port, no replica restarts or is replaced, the caBundle of every configured object
// stays what it was (one CA, no flapping), and a launch-priority-marked pod gets its barrier env
// before and after the renewal (the API server trusts what it is served). The original flags are
// restored at the end.
func TestWebhookCertificateRenewalWithShortValidity(t *testing.T) {
	ctx := framework.Context(t, 8*time.Minute)
	f := framework.New(t)
	ns := f.NewNamespace(ctx, t, "cert-renewal")
	crds, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)

	original := renewalSetValidity(ctx, t, f, renewalValidity)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		renewalRestoreArgs(ctx, t, f, original)
		leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)
		// The short certificate is renewed within a minute, now with the default validity:
		// leave the cluster with a long-lived one.
		framework.WaitFor(ctx, t, 2*time.Minute, "a serving certificate of the default validity again", func(ctx context.Context) (bool, string, error) {
			leaf, _, err := renewalSecret(ctx, f)
			if err != nil {
				return false, "", framework.Retry(err)
			}
			return leaf.NotAfter.Sub(leaf.NotBefore) > time.Hour, "valid until " + leaf.NotAfter.Format(time.RFC3339), nil
		})
	})
	pods := leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)
	bundles := renewalBundles(ctx, t, f, crds)
	_, ca, err := renewalSecret(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	for where, b := range bundles {
		if !bytes.Equal(b, ca) {
			t.Fatalf("%s does not carry the Secret's %s before the test", where, certs.CACertKey)
		}
	}

	// The next serving certificate is issued with the short validity. kruise reads it from
	// cert.pem/key.pem (tls.crt/tls.key are its copies, and a kubernetes.io/tls Secret must keep
	// them): removing those two makes it issue a new one.
	patch := fmt.Appendf(nil, `{"data":{%q:null,%q:null}}`, certs.ServerCertKey, certs.ServerKeyKey)
	if _, err := f.Client.CoreV1().Secrets(framework.KruiseNamespace).Patch(ctx, certs.SecretName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the serving certificate from Secret %s: %v", certs.SecretName, err)
	}
	var first *x509.Certificate
	framework.WaitFor(ctx, t, time.Minute, "a serving certificate valid for "+renewalValidity.String()+" issued under the same CA", func(ctx context.Context) (bool, string, error) {
		leaf, now, err := renewalSecret(ctx, f)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		if !bytes.Equal(now, ca) {
			return false, "", fmt.Errorf("the CA changed: a new serving certificate must be issued under the CA there is")
		}
		first = leaf
		return leaf.NotAfter.Sub(leaf.NotBefore) < 2*renewalValidity, "valid until " + leaf.NotAfter.Format(time.RFC3339), nil
	})
	t.Logf("serving certificate %s valid %s to %s", first.SerialNumber.Text(16), first.NotBefore.Format(time.RFC3339), first.NotAfter.Format(time.RFC3339))
	framework.WaitWebhookServes(ctx, t, pods, first)
	f.RequirePodWebhookMutates(ctx, t, ns, "before")

	// Renewed before it expires; the caBundles never change meanwhile.
	var second *x509.Certificate
	framework.WaitFor(ctx, t, 2*renewalValidity, "tls.crt replaced before "+first.NotAfter.Format(time.RFC3339), func(ctx context.Context) (bool, string, error) {
		if got := renewalBundles(ctx, t, f, crds); !renewalSameBundles(got, bundles) {
			return false, "", fmt.Errorf("a caBundle changed during the renewal: %s", renewalDescribeBundles(got, bundles))
		}
		leaf, now, err := renewalSecret(ctx, f)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		if !bytes.Equal(now, ca) {
			return false, "", fmt.Errorf("the CA changed in Secret %s", certs.SecretName)
		}
		if leaf.Equal(first) {
			return false, "still " + first.SerialNumber.Text(16), nil
		}
		if seen := time.Now(); !seen.Before(first.NotAfter) {
			return false, "", fmt.Errorf("the certificate was replaced only at %s, after it expired at %s", seen.Format(time.RFC3339), first.NotAfter.Format(time.RFC3339))
		}
		second = leaf
		return true, "", nil
	})
	t.Logf("renewed: %s valid %s to %s", second.SerialNumber.Text(16), second.NotBefore.Format(time.RFC3339), second.NotAfter.Format(time.RFC3339))
	framework.WaitWebhookServes(ctx, t, pods, second)
	f.RequirePodWebhookMutates(ctx, t, ns, "after")
	if got := renewalBundles(ctx, t, f, crds); !renewalSameBundles(got, bundles) {
		t.Errorf("a caBundle changed during the renewal: %s", renewalDescribeBundles(got, bundles))
	}

	// The same replicas, never restarted.
	after := f.LiveControllerPods(ctx, t)
	if diff := renewalDescribePods(pods, after); diff != "" {
		t.Errorf("the renewal restarted or replaced a replica: %s", diff)
	}
}

// renewalSetValidity sets --webhook-cert-validity of the controller's container (replacing any),
// waits for the rollout and returns the container's original args.
func renewalSetValidity(ctx context.Context, t *testing.T, f *framework.Framework, validity time.Duration) []string {
	t.Helper()
	var original []string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := f.Client.AppsV1().Deployments(framework.KruiseNamespace).Get(ctx, leaderDeployment, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := &d.Spec.Template.Spec.Containers[0]
		original = slices.Clone(c.Args)
		args := slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool { return strings.HasPrefix(a, "--webhook-cert-validity") })
		c.Args = append(args, "--webhook-cert-validity="+validity.String())
		_, err = f.Client.AppsV1().Deployments(framework.KruiseNamespace).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting --webhook-cert-validity on Deployment %s: %v", leaderDeployment, err)
	}
	return original
}

func renewalRestoreArgs(ctx context.Context, t *testing.T, f *framework.Framework, args []string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := f.Client.AppsV1().Deployments(framework.KruiseNamespace).Get(ctx, leaderDeployment, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Args = args
		_, err = f.Client.AppsV1().Deployments(framework.KruiseNamespace).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Errorf("restoring the args of Deployment %s: %v", leaderDeployment, err)
	}
}

// renewalSecret returns the serving certificate (tls.crt) and the CA bundle (ca-cert.pem) of
// Secret kruise-webhook-certs.
func renewalSecret(ctx context.Context, f *framework.Framework) (*x509.Certificate, []byte, error) {
	s, err := f.Client.CoreV1().Secrets(framework.KruiseNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	pair, err := tls.X509KeyPair(s.Data[certs.TLSCertKey], s.Data[certs.TLSKeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("Secret %s: %s/%s: %w", certs.SecretName, certs.TLSCertKey, certs.TLSKeyKey, err)
	}
	return pair.Leaf, s.Data[certs.CACertKey], nil
}

// renewalBundles returns every caBundle kruise keeps, by where it is.
func renewalBundles(ctx context.Context, t *testing.T, f *framework.Framework, crds apiextensionsclient.Interface) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	m, err := f.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range m.Webhooks {
		out["mutating webhook "+w.Name] = w.ClientConfig.CABundle
	}
	v, err := f.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range v.Webhooks {
		out["validating webhook "+w.Name] = w.ClientConfig.CABundle
	}
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "nodeimages.apps.kruise.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conv := crd.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
		out["CRD "+crd.Name] = conv.Webhook.ClientConfig.CABundle
	}
	return out
}

func renewalSameBundles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func renewalDescribeBundles(got, want map[string][]byte) string {
	var out []string
	for k, v := range got {
		if !bytes.Equal(v, want[k]) {
			out = append(out, k+" changed")
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			out = append(out, k+" gone")
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// renewalDescribePods says how after differs from before in pods (UIDs) and container restarts.
func renewalDescribePods(before, after []corev1.Pod) string {
	restarts := func(p corev1.Pod) int32 {
		var n int32
		for _, s := range p.Status.ContainerStatuses {
			n += s.RestartCount
		}
		return n
	}
	was := map[types.UID]int32{}
	for _, p := range before {
		was[p.UID] = restarts(p)
	}
	var out []string
	for _, p := range after {
		n, ok := was[p.UID]
		switch {
		case !ok:
			out = append(out, p.Name+" is new")
		case restarts(p) != n:
			out = append(out, fmt.Sprintf("%s restarted (%d -> %d)", p.Name, n, restarts(p)))
		}
		delete(was, p.UID)
	}
	for uid := range was {
		out = append(out, "pod "+string(uid)+" is gone")
	}
	return strings.Join(out, "; ")
}
