package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/pkg/controller"
)

// certManagerBinary is $KRUISE_CERT_MANAGER, the cert-manager-lite that hack/build-certmanager.sh
// builds (make test-integration sets it); cert-manager's CRDs lie in crds/ next to it.
func certManagerBinary(t *testing.T) (bin, crds string) {
	t.Helper()
	bin = os.Getenv("KRUISE_CERT_MANAGER")
	if bin == "" {
		t.Skip("KRUISE_CERT_MANAGER is not set: build cert-manager-lite with hack/build-certmanager.sh " +
			"and set it to the path it prints (make test-integration does both)")
	}
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("KRUISE_CERT_MANAGER=%s is not an executable: run hack/build-certmanager.sh", bin)
	}
	return bin, filepath.Join(filepath.Dir(bin), "crds")
}

// helmForTest is $KRUISE_HELM (make test-integration sets it), or a skip.
func helmForTest(t *testing.T) string {
	t.Helper()
	h := os.Getenv("KRUISE_HELM")
	if h == "" {
		t.Skip("KRUISE_HELM is not set: build helm with make deps (make test-integration sets it)")
	}
	return h
}

// writeKubeconfig writes cfg's client certificate credentials as a kubeconfig for a process.
func writeKubeconfig(t *testing.T, cfg *rest.Config, path string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "test"
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
}

// installCRDFiles creates the CRDs in dir's YAML files and waits until each is Established.
func (c *cluster) installCRDFiles(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no CRDs in %s", dir)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.Unmarshal(raw, crd), f)
		_, err = c.apiext.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), crd, metav1.CreateOptions{})
		require.NoError(t, err, "installing %s", f)
		waitFor(t, "CRD "+crd.Name+" established", func(ctx context.Context) (bool, error) {
			got, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
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
}

// applyChartWebhookObjects renders the chart with helm and creates what the webhook certificates
// depend on, as rendered: the Namespaces, Service kruise-webhook-service and both webhook
// configurations. It returns the args of the hook Jobs rendered, by Job name.
func applyChartWebhookObjects(t *testing.T, cs kubernetes.Interface, namespace string, set ...string) map[string][]string {
	t.Helper()
	args := []string{"template", "kruise", filepath.Join("..", "..", "deploy", "charts", "kruise"),
		"--kube-version", k8sVersion, "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmForTest(t), args...)
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+tmp, "HELM_CONFIG_HOME="+tmp, "HELM_DATA_HOME="+tmp)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	require.NoError(t, cmd.Run(), "helm template: %s", stderr.String())

	ctx := context.Background()
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	created := map[string]bool{}
	hooks := map[string][]string{}
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		if err != nil {
			continue // kinds client-go's scheme does not know are not needed here
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			if o.Name != "kruise-webhook-service" {
				continue
			}
			_, err = cs.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			_, err = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			_, err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{})
		case *batchv1.Job:
			hooks[o.Name] = o.Spec.Template.Spec.Containers[0].Args
			continue
		default:
			continue
		}
		require.NoError(t, err, "creating the chart's %T", obj)
		created[obj.GetObjectKind().GroupVersionKind().Kind] = true
	}
	for _, kind := range []string{"Namespace", "Service", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		require.True(t, created[kind], "the chart rendered no %s", kind)
	}
	return hooks
}

// runConversionHook runs the kruise-controller subcommand of a hook Job's args against the
// cluster of kubeconfig, with the Job's namespace.
func runConversionHook(t *testing.T, args []string, kubeconfig, namespace string) {
	t.Helper()
	require.NotEmpty(t, args, "no such hook Job rendered")
	commands := map[string]func() *cobra.Command{
		"setup-conversion": controller.NewSetupConversionCommand,
		"reset-conversion": controller.NewResetConversionCommand,
	}
	newCmd, ok := commands[args[0]]
	require.True(t, ok, "hook Job runs %q, not a conversion command", args[0])
	cmd := newCmd()
	cmd.SetArgs(append(slices.Clone(args[1:]), "--kubeconfig="+kubeconfig, "--namespace="+namespace))
	require.NoError(t, cmd.Execute(), "kruise-controller %s", strings.Join(args, " "))
}

// docsYAML returns the n-th (from 0) ```yaml block of the section under heading in
// docs/operations.md: the test applies what the documentation tells users to apply, unchanged.
func docsYAML(t *testing.T, heading string, n int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "docs/operations.md has no heading %q", heading)
	section := doc[i+len(heading)+2:]
	if end := regexp.MustCompile("\n##+ ").FindStringIndex(section); end != nil {
		section = section[:end[0]]
	}
	blocks := regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```").FindAllStringSubmatch(section, -1)
	require.Greater(t, len(blocks), n, "fewer than %d yaml blocks under %q in docs/operations.md", n+1, heading)
	return blocks[n][1]
}

// applyYAML creates every object of a multi-document YAML with the dynamic client; the resource
// of each kind is given by resources.
func applyYAML(t *testing.T, dc dynamic.Interface, doc string, resources map[string]schema.GroupVersionResource) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096)
	n := 0
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			break
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvr, ok := resources[obj.GetKind()]
		require.True(t, ok, "no resource known for kind %s", obj.GetKind())
		_, err := dc.Resource(gvr).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
		require.NoError(t, err, "creating %s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
		n++
	}
	require.Positive(t, n, "no objects in %q", doc)
}
