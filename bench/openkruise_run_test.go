//go:build bench

package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/netns"
)

// openKruise is OpenKruise's kruise-manager run by the benchmark as a host process, in a network
// namespace of its own, against the local cluster, for one namespace of benchmark pods. What it
// shares names with in kruise (the webhook configurations it reads by fixed names, the Secret
// kruise-webhook-certs, the namespace kruise-system, the kruise-manager Lease kruise's
// coexistence guard looks for) is left untouched or put back exactly; see start.
type openKruise struct {
	e     *env
	ns    string // the namespace of its pods; also its POD_NAMESPACE
	build openKruiseBuild
	dir   string // its certificates, protection log and log

	netns   *netns.Namespace
	proc    *netns.Process
	undo    []func(context.Context) error // in reverse order
	webhook string                        // its pod webhook's URL, as the API server calls it
	okOptions
}

// okOptions is what a benchmark may change of the phase.
type okOptions struct {
	// gates are kruise-manager's feature gates; okDefaultGates when empty.
	gates string
	// controllers are the controllers whose workers must have started before the phase begins;
	// container-launch-priority-controller when empty.
	controllers []string
	// exclude and excludeValidating are kruise's mutating webhooks besides its pod webhook
	// (mpod.kb.io), and its validating webhooks, that must leave the phase's namespace alone while
	// kruise-controller is scaled to 0.
	exclude, excludeValidating []string
	// before are further steps run before kruise-manager starts (after kruise-controller is
	// scaled to 0 and the namespace excluded); each appends its own undo to ok.undo.
	before []func(ok *openKruise) startStep
}

// Names of the benchmark's own objects for the OpenKruise phase.
const (
	okConfigName  = "kruise-bench-openkruise"
	okWebhookName = "mpod.openkruise-bench.kb.io"
	okInNetnsPort = "9876"
	sidecarSetCRD = "sidecarsets.apps.kruise.io"
)

// startOpenKruise prepares the cluster and starts kruise-manager. Everything it changes is put
// back by stop, which the caller must call (also on failure).
//
//   - kruise-controller is scaled to 0: its barrier controller would otherwise release the
//     barriers of OpenKruise's pods too (the mechanism is the same), and kruise's pod webhook
//     excludes the phase's namespace (namespaceSelector), so that only OpenKruise's webhook
//     mutates its pods. Both are restored, and the controller must lead again, in stop.
//   - OpenKruise runs with EnableExternalCerts: it then only checks that kruise's webhook
//     configurations and CRD conversion blocks (it reads them by OpenKruise's names, which are
//     kruise's too) carry the CA of its Secret, and patches nothing. Its Secret, in the phase's
//     namespace, holds kruise's CA certificate (exactly the caBundle kruise wrote) and a serving
//     certificate for 127.0.0.1/localhost that the benchmark signs with kruise's CA key.
//   - The API server calls it through a configuration of the benchmark's own
//     (okConfigName: only its pod webhook, only the phase's namespace, failurePolicy Fail), at
//     the host end of a forwarder into its network namespace.
//   - No leader election (no kruise-manager Lease, which kruise's coexistence guard keys on);
//     KruiseDaemon=false stops its CRR, NodeImage, ImagePullJob and ImageListPullJob
//     controllers, which would act on kruise's objects (same API group). Its informers see the
//     whole cluster (--namespace would confine them, but its pod webhook then fails: "informer
//     *cache.multiNamespaceInformer from cache is not a SharedIndexInformer"); its remaining
//     controllers act only on pods with its barriers, readiness gate or SidecarSets, none of
//     which exist outside the phase's namespace while the benchmark holds the cluster. Its pod
//     webhook is only served when the SidecarSet CRD exists: the benchmark installs
//     OpenKruise's for the phase if the cluster has none, and removes it.
func (e *env) startOpenKruise(ctx context.Context, t *testing.T, b openKruiseBuild) (*openKruise, error) {
	return e.startOpenKruiseWith(ctx, t, b, okOptions{})
}

// startOpenKruiseWith is startOpenKruise with the options o.
func (e *env) startOpenKruiseWith(ctx context.Context, t *testing.T, b openKruiseBuild, o okOptions) (*openKruise, error) {
	if o.gates == "" {
		o.gates = okDefaultGates
	}
	if len(o.controllers) == 0 {
		o.controllers = []string{"container-launch-priority-controller"}
	}
	ok, err := e.newOpenKruise(b)
	ok.okOptions = o
	if err != nil {
		return ok, err
	}
	steps := []startStep{
		{"namespace", ok.createNamespace},
		{"scale kruise-controller to 0", ok.scaleKruiseDown},
		{"exclude the namespace from kruise's pod webhook", ok.excludeFromKruise},
		{"SidecarSet CRD", ok.installSidecarSetCRD},
	}
	for _, f := range o.before {
		steps = append(steps, f(ok))
	}
	steps = append(steps, []startStep{
		{"certificates", ok.writeSecret},
		{"network namespace", ok.startNetns},
		{"webhook configuration", ok.createConfig},
		{"kruise-manager", ok.startManager},
		{"webhook answering", ok.waitServing},
	}...)
	return ok, runSteps(ctx, t, "OpenKruise phase", steps)
}

// newOpenKruise names the phase's namespace after the benchmark's and makes its directory.
func (e *env) newOpenKruise(b openKruiseBuild) (*openKruise, error) {
	// The default gates for every phase that sets none: without EnableExternalCerts kruise-manager
	// would try to rewrite the Secret kruise-webhook-certs, and fail.
	ok := &openKruise{e: e, build: b, okOptions: okOptions{gates: okDefaultGates}}
	ok.ns = "bench-openkruise-" + e.ns[strings.LastIndexByte(e.ns, '-')+1:]
	ok.dir = filepath.Join(openKruiseCache, "run-"+ok.ns)
	return ok, os.MkdirAll(ok.dir, 0o755)
}

// stop undoes what startOpenKruise did, last first, and returns every error.
func (ok *openKruise) stop(ctx context.Context) error {
	var errs []error
	for i := len(ok.undo) - 1; i >= 0; i-- {
		if err := ok.undo[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	ok.undo = nil
	return errors.Join(errs...)
}

func (ok *openKruise) createNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ok.ns}}
	if _, err := ok.e.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	ok.undo = append(ok.undo, func(ctx context.Context) error {
		return ok.e.client.CoreV1().Namespaces().Delete(ctx, ok.ns, metav1.DeleteOptions{})
	})
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ok.e.client.CoreV1().ServiceAccounts(ok.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

func (ok *openKruise) scaleKruiseDown(ctx context.Context) error {
	deps := ok.e.client.AppsV1().Deployments(kruiseNamespace)
	sc, err := deps.GetScale(ctx, controllerDeploy, metav1.GetOptions{})
	if err != nil {
		return err
	}
	replicas := sc.Spec.Replicas
	args, _, err := ok.e.controllerArgs(ctx)
	if err != nil {
		return err
	}
	setScale := func(ctx context.Context, n int32) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := deps.GetScale(ctx, controllerDeploy, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = n
			_, err = deps.UpdateScale(ctx, controllerDeploy, &autoscalingv1.Scale{ObjectMeta: s.ObjectMeta, Spec: s.Spec}, metav1.UpdateOptions{})
			return err
		})
	}
	ok.undo = append(ok.undo, func(ctx context.Context) error {
		if err := setScale(ctx, replicas); err != nil {
			return fmt.Errorf("scaling %s back to %d: %w", controllerDeploy, replicas, err)
		}
		// Healthy again: rolled out, leading, its controllers started.
		if _, err := ok.e.waitController(ctx, args, mechanismOf(args)); err != nil {
			return fmt.Errorf("kruise-controller after the OpenKruise phase: %w", err)
		}
		return nil
	})
	if err := setScale(ctx, 0); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := ok.e.client.CoreV1().Pods(kruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kruise-controller"})
		return err == nil && len(l.Items) == 0, nil
	})
}

func (ok *openKruise) excludeFromKruise(ctx context.Context) error {
	for _, name := range append([]string{podWebhookName}, ok.exclude...) {
		if err := ok.excludeFromWebhook(ctx, false, name); err != nil {
			return err
		}
	}
	for _, name := range ok.excludeValidating {
		if err := ok.excludeFromWebhook(ctx, true, name); err != nil {
			return err
		}
	}
	return nil
}

// excludeFromWebhook adds the phase's namespace to what the namespaceSelector of kruise's
// mutating (or, with validating, validating) webhook name leaves out, and puts the selector back
// on undo.
func (ok *openKruise) excludeFromWebhook(ctx context.Context, validating bool, name string) error {
	adm := ok.e.client.AdmissionregistrationV1()
	// edit applies f to the webhook's namespaceSelector, on the latest configuration.
	edit := func(ctx context.Context, f func(**metav1.LabelSelector)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if validating {
				c, err := adm.ValidatingWebhookConfigurations().Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				i := slices.IndexFunc(c.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == name })
				if i < 0 {
					return fmt.Errorf("%s has no webhook %s", c.Name, name)
				}
				f(&c.Webhooks[i].NamespaceSelector)
				_, err = adm.ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{})
				return err
			}
			c, err := adm.MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			i := slices.IndexFunc(c.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == name })
			if i < 0 {
				return fmt.Errorf("%s has no webhook %s", c.Name, name)
			}
			f(&c.Webhooks[i].NamespaceSelector)
			_, err = adm.MutatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{})
			return err
		})
	}
	var saved *metav1.LabelSelector
	err := edit(ctx, func(sel **metav1.LabelSelector) {
		saved = (*sel).DeepCopy()
		next := (*sel).DeepCopy()
		if next == nil {
			next = &metav1.LabelSelector{}
		}
		next.MatchExpressions = append(next.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{ok.ns}})
		*sel = next
	})
	if err != nil {
		return err
	}
	ok.undo = append(ok.undo, func(ctx context.Context) error {
		return edit(ctx, func(sel **metav1.LabelSelector) { *sel = saved })
	})
	return nil
}

func (ok *openKruise) crdClient() (apiextensionsclient.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, err
	}
	return apiextensionsclient.NewForConfig(cfg)
}

func (ok *openKruise) installSidecarSetCRD(ctx context.Context) error {
	cc, err := ok.crdClient()
	if err != nil {
		return err
	}
	crds := cc.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Get(ctx, sidecarSetCRD, metav1.GetOptions{}); err == nil {
		return nil // the cluster has one: used as it is, left in place
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(ok.build.src, "config", "crd", "bases", "apps.kruise.io_sidecarsets.yaml"))
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		return fmt.Errorf("OpenKruise's SidecarSet CRD: %w", err)
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	ok.undo = append(ok.undo, func(ctx context.Context) error {
		err := crds.Delete(ctx, sidecarSetCRD, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := crds.Get(ctx, sidecarSetCRD, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// kruiseCA is kruise's CA: the certificate exactly as its pod webhook's caBundle holds it (what
// OpenKruise compares byte for byte) and the key from kruise's Secret.
func (ok *openKruise) kruiseCA(ctx context.Context) ([]byte, *x509.Certificate, any, error) {
	c, err := ok.e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	var bundle []byte
	for _, w := range c.Webhooks {
		if w.Name == podWebhookName {
			bundle = w.ClientConfig.CABundle
		}
	}
	s, err := ok.e.client.CoreV1().Secrets(kruiseNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	pair, err := tls.X509KeyPair(s.Data[certs.CACertKey], s.Data[certs.CAKeyKey])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kruise's CA in Secret %s/%s: %w", kruiseNamespace, certs.SecretName, err)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, nil, err
	}
	if !slices.Equal(bundle, s.Data[certs.CACertKey]) {
		return nil, nil, nil, fmt.Errorf("the caBundle of %s differs from %s of Secret %s: kruise is not settled", podWebhookName, certs.CACertKey, certs.SecretName)
	}
	return bundle, ca, pair.PrivateKey, nil
}

func (ok *openKruise) writeSecret(ctx context.Context) error {
	bundle, ca, caKey, err := ok.kruiseCA(ctx)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := servingCert(ca, caKey)
	if err != nil {
		return err
	}
	// OpenKruise's external-certificate keys (cert-manager's).
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: certs.SecretName, Namespace: ok.ns},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			"ca.crt":  bundle,
			"tls.crt": certPEM,
			"tls.key": keyPEM,
		},
	}
	_, err = ok.e.client.CoreV1().Secrets(ok.ns).Create(ctx, s, metav1.CreateOptions{})
	return err // deleted with the namespace
}

// servingCert is a serving certificate for 127.0.0.1 and localhost, valid for a day, signed by
// ca (key caKey), and its key, both PEM.
func servingCert(ca *x509.Certificate, caKey any) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "openkruise-bench"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing OpenKruise's serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func (ok *openKruise) startNetns(ctx context.Context) error {
	n, err := netns.New(ctx, func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
	if err != nil {
		return err
	}
	ok.netns = n
	ok.undo = append(ok.undo, func(context.Context) error { n.Close(); return nil })
	// Its API calls: the kubeconfig's address (the API server on the host's loopback) inside →
	// the same address on the host.
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	if err := n.ForwardServer(cfg.Host); err != nil {
		return err
	}
	// The API server's calls of its webhook: host 127.0.0.1:<any> → its webhook port inside.
	addr, err := n.ForwardIn(0, "127.0.0.1:"+okInNetnsPort)
	if err != nil {
		return err
	}
	ok.webhook = "https://" + addr + "/mutate-pod"
	return nil
}

func (ok *openKruise) createConfig(ctx context.Context) error {
	bundle, _, _, err := ok.kruiseCA(ctx)
	if err != nil {
		return err
	}
	cfgs := ok.e.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	c := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: okConfigName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    okWebhookName,
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To[int32](10),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &ok.webhook, CABundle: bundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
					Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ok.ns}},
		}},
	}
	if _, err := cfgs.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		return err
	}
	ok.undo = append(ok.undo, func(ctx context.Context) error {
		err := cfgs.Delete(ctx, okConfigName, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return nil
}

func (ok *openKruise) startManager(context.Context) error {
	proc, err := startManagerProcess(ok.netns, ok.build.bin, ok.dir, os.Getenv("KUBECONFIG"), ok.ns,
		"--enable-leader-election=false",
		"--metrics-addr=0",
		"--feature-gates="+ok.gates,
	)
	if err != nil {
		return err
	}
	ok.proc = proc
	ok.undo = append(ok.undo, func(context.Context) error {
		proc.Stop(10 * time.Second)
		return nil
	})
	return nil
}

// okDefaultGates are the phase's feature gates unless a benchmark sets others. KruiseDaemon=false:
// no CRR/NodeImage/ImagePullJob controllers on kruise's objects. The pod webhook's WorkloadSpread
// and PodUnavailableBudget steps are off: the launch-priority phase needs neither.
const okDefaultGates = "KruiseDaemon=false,EnableExternalCerts=true,WorkloadSpread=false,PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=false"

// startManagerProcess starts kruise-manager in n with the arguments every run shares (no pprof,
// its protection log, a health probe and webhook port of its own inside n, --v=2) and args,
// talking to the API server of kubeconfig as if it ran in namespace podNS; its log is
// dir/kruise-manager.log, closed when it ends.
func startManagerProcess(n *netns.Namespace, bin, dir, kubeconfig, podNS string, args ...string) (*netns.Process, error) {
	logPath := filepath.Join(dir, "kruise-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := n.Command(bin, append([]string{
		"--health-probe-addr=127.0.0.1:8000",
		"--enable-pprof=false",
		"--protection-log-path=" + filepath.Join(dir, "log"),
		"--v=2",
	}, args...)...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"POD_NAMESPACE="+podNS,
		"WEBHOOK_PORT="+okInNetnsPort,
		"WEBHOOK_CERT_DIR="+filepath.Join(dir, "certs"),
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	proc, err := netns.StartProcess(cmd)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { <-proc.Done(); logFile.Close() }()
	return proc, nil
}

// waitServing waits until a dry-run Create of a prioritised pod in the namespace comes back
// with OpenKruise's barriers: the API server reaches its webhook and it is initialised.
func (ok *openKruise) waitServing(ctx context.Context) error {
	probe := benchPod(ok.ns, "dry-run-probe", lpContainers(true))
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if done, err := ok.proc.Exited(); done {
			return false, fmt.Errorf("kruise-manager exited: %v", err)
		}
		p, err := ok.e.client.CoreV1().Pods(ok.ns).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err
			return false, nil
		}
		return hasEnv(p, 2, lp.EnvBarrier), nil
	})
	logPath := filepath.Join(ok.dir, "kruise-manager.log")
	if err != nil {
		return fmt.Errorf("OpenKruise's webhook not serving (pid %d, log %s; last: %v): %w", ok.proc.PID(), logPath, last, err)
	}
	// Its controllers are set up after the webhook, one by one, each after looking its kind up
	// in discovery; the lookup of a kind this cluster does not serve retries for about 16 s, and
	// container-launch-priority-controller comes after a dozen of them: wait for its workers.
	return waitManagerControllers(ctx, ok.proc, logPath, ok.controllers)
}

// waitManagerControllers waits until kruise-manager's log (logPath) shows the workers of each of
// controllers started.
func waitManagerControllers(ctx context.Context, p *netns.Process, logPath string, controllers []string) error {
	var missing string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("kruise-manager exited: %v", err)
		}
		raw, err := os.ReadFile(logPath)
		if err != nil {
			return false, err
		}
		for _, c := range controllers {
			if !strings.Contains(string(raw), `"Starting workers" "controller"="`+c+`"`) {
				missing = c
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("OpenKruise's %s not started (log %s): %w", missing, logPath, err)
	}
	return nil
}

// startStep is one named step of starting OpenKruise.
type startStep struct {
	name string
	f    func(context.Context) error
}

// runSteps runs steps in order, logging how long each took, and stops at the first error, which
// it returns named by label and step.
func runSteps(ctx context.Context, t *testing.T, label string, steps []startStep) error {
	for _, s := range steps {
		start := time.Now()
		if err := s.f(ctx); err != nil {
			return fmt.Errorf("%s, %s: %w", label, s.name, err)
		}
		t.Logf("%s: %s (%s)", label, s.name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
