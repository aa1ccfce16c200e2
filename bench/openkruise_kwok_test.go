//go:build bench

package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/pkg/controller"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/netns"
)

// okMetricsPort is kruise-manager's metrics port inside its network namespace.
const okMetricsPort = "8080"

// okLeaseName is the Lease kruise-manager leads by (its --leader-election-id default).
const okLeaseName = "kruise-manager"

// startOpenKruiseOnKWOK runs OpenKruise's kruise-manager as a host process against the private
// control plane c, as kruise-controller runs there (leader election on, no daemon: KruiseDaemon
// false, client rate qps and burst twice it; no PodUnavailableBudget gates, see below), and returns a probe of it once the workers of
// controllers have started. kruise-controller must be stopped first: both would act on the same
// objects. What its start needs is prepared on c, which is the benchmark's alone:
//
//   - every CRD of OpenKruise's module the cluster lacks (its controllers look their kinds up in
//     discovery and wait ~16 s for each kind not served);
//   - empty webhook configurations of the names it reads, and its external certificates
//     (EnableExternalCerts: it only checks that the configurations carry their CA) in Secret
//     kruise-webhook-certs of kruise-system: a CA of the benchmark's and a serving certificate
//     for localhost. Its controllers start only once its own webhook server answers, which it
//     checks itself; nothing calls the webhook here;
//   - a network namespace (its webhook server binds 0.0.0.0): its API calls go out through a
//     forwarder to the API server's loopback address, its metrics come in through another.
func startOpenKruiseOnKWOK(t *testing.T, c *kwokCluster, b openKruiseBuild, dir string, qps int, controllers ...string) *leaderProbe {
	t.Helper()
	return startOpenKruiseOnKWOKGates(t, c, b, dir, qps, nil, controllers...)
}

// startOpenKruiseOnKWOKGates is startOpenKruiseOnKWOK with further feature gates (e.g.
// "ResourceDistributionGate=true", for a controller the reference keeps off by default).
func startOpenKruiseOnKWOKGates(t *testing.T, c *kwokCluster, b openKruiseBuild, dir string, qps int, gates []string, controllers ...string) *leaderProbe {
	t.Helper()
	ctx := context.Background()
	installMissingCRDs(t, c, filepath.Join(b.src, "config", "crd", "bases"))
	for _, err := range []error{
		createEmptyWebhookConfigs(ctx, c),
		writeExternalCerts(ctx, c),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := netns.New(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	u, err := url.Parse(c.host)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.ForwardOut(u.Host); err != nil {
		t.Fatal(err)
	}
	metrics, err := n.ForwardIn(0, "127.0.0.1:"+okMetricsPort)
	if err != nil {
		t.Fatal(err)
	}
	okDir := filepath.Join(dir, "openkruise")
	if err := os.MkdirAll(okDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := startManagerProcess(n, b.bin, okDir, c.kubeconfigs[openKruiseUser], controller.DefaultNamespace,
		"--enable-leader-election=true",
		"--leader-election-namespace="+controller.DefaultNamespace,
		"--leader-election-id="+okLeaseName,
		"--metrics-addr=127.0.0.1:"+okMetricsPort,
		fmt.Sprintf("--rest-config-qps=%d", qps),
		fmt.Sprintf("--rest-config-burst=%d", 2*qps),
		// Its budget controller watches policy.kruise.io/v1beta1, which kruise's CRD does not
		// serve (its cache never syncs and the manager exits): off, with no budget here.
		"--feature-gates="+strings.Join(append([]string{"KruiseDaemon=false", "EnableExternalCerts=true",
			"PodUnavailableBudgetDeleteGate=false", "PodUnavailableBudgetUpdateGate=false"}, gates...), ","),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(15 * time.Second) })
	logPath := filepath.Join(okDir, "kruise-manager.log")
	t.Logf("OpenKruise kruise-manager pid %d, log %s", p.PID(), logPath)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := waitManagerControllers(wctx, p, logPath, controllers); err != nil {
		t.Fatal(err)
	}
	probe := &leaderProbe{
		pid: p.PID(),
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", metrics)
			},
		}},
		apiserver: c.apiserver.Process.Pid,
		auditLog:  c.auditLog,
		user:      openKruiseUser,
		lease:     okLeaseName,
	}
	pollStart(t, "OpenKruise's metrics", func(ctx context.Context) (bool, error) {
		_, err := probe.scrape(ctx)
		return err == nil, nil
	})
	return probe
}

// installMissingCRDs creates the CRDs of dir's files whose names the cluster does not have yet,
// and waits until each is Established.
func installMissingCRDs(t *testing.T, c *kwokCluster, dir string) {
	t.Helper()
	apiext, err := apiextensionsclient.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	ctx := context.Background()
	crds := apiext.ApiextensionsV1().CustomResourceDefinitions()
	var added []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := crds.Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
			continue
		}
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("installing %s: %v", f, err)
		}
		added = append(added, crd.Name)
	}
	for _, name := range added {
		pollStart(t, name+" Established", func(ctx context.Context) (bool, error) {
			got, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	}
	t.Logf("OpenKruise's CRDs the cluster lacked: %s", strings.Join(added, ", "))
}

func createEmptyWebhookConfigs(ctx context.Context, c *kwokCluster) error {
	adm := c.kube.AdmissionregistrationV1()
	if _, err := adm.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: certs.MutatingWebhookConfigurationName}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: certs.ValidatingWebhookConfigurationName}}, metav1.CreateOptions{})
	return err
}

// writeExternalCerts makes a CA and a serving certificate it signs and writes both to Secret
// kruise-webhook-certs of kruise-system, under OpenKruise's external-certificate keys.
func writeExternalCerts(ctx context.Context, c *kwokCluster) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kruise-bench-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := servingCert(ca, caKey)
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().Secrets(controller.DefaultNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: certs.SecretName, Namespace: controller.DefaultNamespace},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			"tls.crt": certPEM,
			"tls.key": keyPEM,
		},
	}, metav1.CreateOptions{})
	return err
}

// deleteCRD deletes CRD name and waits until it is gone.
func (c *kwokCluster) deleteCRD(t *testing.T, name string) {
	t.Helper()
	apiext, err := apiextensionsclient.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	crds := apiext.ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting CRD %s: %v", name, err)
	}
	pollStart(t, "CRD "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
