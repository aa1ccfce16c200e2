package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodekruise/kruise/pkg/controller"
)

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
