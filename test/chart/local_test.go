package chart

import (
	"bytes"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// kubectlBinary is $KRUISE_KUBECTL, else the kubectl that hack/build-k8s.sh builds, else the one
// on PATH.
func kubectlBinary(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KRUISE_KUBECTL"); k != "" {
		return k
	}
	cache := os.Getenv("KRUISE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kruise")
	}
	if found, _ := filepath.Glob(filepath.Join(cache, "k8s", "*", "bin", "kubectl")); len(found) > 0 {
		return found[len(found)-1]
	}
	if k, err := exec.LookPath("kubectl"); err == nil {
		return k
	}
	t.Skip("no kubectl to build the kustomize overlay with: run make deps")
	return ""
}

// kustomized is `kubectl kustomize` of a directory as typed objects, keyed as render keys them;
// the CRDs are left out (Helm installs them from crds/, compared by hack/verify.sh).
func kustomized(t *testing.T, dir string) rendered {
	t.Helper()
	cmd := exec.Command(kubectlBinary(t), "kustomize", dir)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	objs := rendered{}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || bytes.Contains(raw.Raw, []byte(`"kind":"CustomResourceDefinition"`)) {
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		require.NoError(t, err, "object does not decode into its API type:\n%s", raw.Raw)
		m, err := meta.Accessor(obj)
		require.NoError(t, err)
		objs[gvk.Kind+"/"+m.GetNamespace()+"/"+m.GetName()] = obj
	}
	require.NotEmpty(t, objs)
	return objs
}

// The local cluster's two installs (hack/deploy.sh: kustomize of deploy/overlays/local, or Helm
// with its values.yaml) deploy the same objects, webhooks included. Left out: the images, which
// hack/deploy.sh pins to the pushed digests either way; the order of env (kustomize puts patched
// entries first, as it does validating webhook entries) and whitespace inside strings (kustomize re-folds long CEL expressions); and the
// daemon's DaemonSet, whose credential-provider config comes from a host directory in the overlay
// and from the chart's ConfigMap (filled by hack/deploy.sh --set-file) with Helm.
func TestLocalInstallsAgree(t *testing.T) {
	local := filepath.Join(chartDir(t), "..", "..", "overlays", "local")
	// Without Helm's hooks: the pre-delete Job is for helm uninstall only (TestRenderConversionResetHook).
	viaHelm := render(t, "--namespace", "kruise-system", "--no-hooks", "-f", filepath.Join(local, "values.yaml"))
	viaKustomize := kustomized(t, local)
	require.Equal(t, viaHelm.keys(), viaKustomize.keys())
	opts := cmp.Options{
		cmp.FilterPath(func(p cmp.Path) bool { return strings.HasSuffix(p.GoString(), ".Image") }, cmp.Ignore()),
		cmpopts.SortSlices(func(a, b corev1.EnvVar) bool { return a.Name < b.Name }),
		// kustomize puts a patched webhook entry (vpod.kb.io, the update gate) first too; the
		// order of a configuration's webhooks means nothing for validating ones.
		cmpopts.SortSlices(func(a, b admissionregistrationv1.ValidatingWebhook) bool { return a.Name < b.Name }),
		cmp.Transformer("collapseSpace", func(s string) string { return strings.Join(strings.Fields(s), " ") }),
	}
	for _, key := range viaHelm.keys() {
		if key == "DaemonSet/kruise-system/kruise-daemon" {
			continue
		}
		if diff := cmp.Diff(viaHelm[key], viaKustomize[key], opts); diff != "" {
			t.Errorf("%s differs between Helm (-) and kustomize (+):\n%s", key, diff)
		}
	}
	for _, key := range []string{mutatingKey, validatingKey, serviceKey, certsRoleKey} {
		require.Contains(t, viaKustomize, key, "the local install serves the webhooks")
	}
	require.Contains(t, viaKustomize.deployment(t).Spec.Template.Spec.Containers[0].Args,
		"--webhook-conversion-crds=nodeimages.apps.kruise.io,clonesets.apps.kruise.io,daemonsets.apps.kruise.io,statefulsets.apps.kruise.io,sidecarsets.apps.kruise.io", "the local install converts NodeImages through /convert")
}

// deploy/base is the chart with its default values, webhooks included: what docs/operations.md
// tells kustomize users to apply.
func TestKustomizeBaseIsTheChartDefaults(t *testing.T) {
	viaHelm := render(t, "--namespace", "kruise-system", "--no-hooks")
	viaKustomize := kustomized(t, filepath.Join(chartDir(t), "..", "..", "base"))
	require.Equal(t, viaHelm.keys(), viaKustomize.keys())
	opts := cmp.Options{
		cmpopts.SortSlices(func(a, b corev1.EnvVar) bool { return a.Name < b.Name }),
		cmp.Transformer("collapseSpace", func(s string) string { return strings.Join(strings.Fields(s), " ") }),
	}
	for _, key := range viaHelm.keys() {
		if diff := cmp.Diff(viaHelm[key], viaKustomize[key], opts); diff != "" {
			t.Errorf("%s differs between Helm (-) and kustomize (+):\n%s", key, diff)
		}
	}
	for _, key := range []string{mutatingKey, validatingKey, serviceKey, certsRoleKey} {
		require.Contains(t, viaKustomize, key, "the kustomize install serves the webhooks")
	}
}
