// Package certmanager runs cert-manager for tests: cert-manager-lite (hack/tools/certmanager,
// cert-manager's own controllers and cainjector, built from its module by
// hack/build-certmanager.sh) as a host process, cert-manager's CRDs, and the cert-manager objects
// docs/operations.md tells users to apply, read from the documentation itself so that what is
// tested is what is written there. The integration tests (a kube-apiserver of their own) and the
// e2e tests (the local cluster) share it.
package certmanager

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodekruise/kruise/test/repo"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/test/proc"
)

const (
	// InjectAnnotation makes cainjector fill an object's caBundle from a Certificate.
	InjectAnnotation = "cert-manager.io/inject-ca-from"
	// DocsHeading is the section of docs/operations.md with the Issuer and Certificate to apply.
	DocsHeading = "### Certificates: external (cert-manager)"
)

// Resources maps the cert-manager kinds the docs use to their resources.
var Resources = map[string]schema.GroupVersionResource{
	"Issuer":      {Group: "cert-manager.io", Version: "v1", Resource: "issuers"},
	"Certificate": {Group: "cert-manager.io", Version: "v1", Resource: "certificates"},
}

// Binary returns $KRUISE_CERT_MANAGER, the cert-manager-lite hack/build-certmanager.sh builds,
// and the directory of cert-manager's CRDs next to it; "" when the variable is not set.
func Binary(t testing.TB) (bin, crds string) {
	t.Helper()
	bin = os.Getenv("KRUISE_CERT_MANAGER")
	if bin == "" {
		return "", ""
	}
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("KRUISE_CERT_MANAGER=%s is not an executable: run hack/build-certmanager.sh", bin)
	}
	return bin, filepath.Join(filepath.Dir(bin), "crds")
}

// Start runs cert-manager-lite against kubeconfig, its output in logFile, and stops it when the
// test ends (SIGTERM, then SIGKILL), printing the end of its log if the test failed.
func Start(t testing.TB, bin, kubeconfig, logFile string) *exec.Cmd {
	t.Helper()
	return proc.Start(t, logFile, bin, "--kubeconfig="+kubeconfig, "--v=2")
}

// InstallCRDs creates the CRDs of dir's YAML files (leaving any that exist) and waits until each
// is Established. It returns their names.
func InstallCRDs(ctx context.Context, t testing.TB, client apiextensionsclient.Interface, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s (%v): run hack/build-certmanager.sh", dir, err)
	}
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing %s: %v", f, err)
		}
		names = append(names, crd.Name)
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
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
		if err != nil {
			t.Fatalf("CRD %s not Established: %v", name, err)
		}
	}
	return names
}

// DocsYAML returns the n-th (from 0) ```yaml block of the section under heading in
// docs/operations.md: tests apply what the documentation tells users to apply, unchanged.
func DocsYAML(t testing.TB, heading string, n int) string {
	t.Helper()
	raw, err := os.ReadFile(repo.Path(t, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/operations.md has no heading %q", heading)
	}
	section := doc[i+len(heading)+2:]
	if end := regexp.MustCompile("\n##+ ").FindStringIndex(section); end != nil {
		section = section[:end[0]]
	}
	blocks := regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```").FindAllStringSubmatch(section, -1)
	if len(blocks) <= n {
		t.Fatalf("fewer than %d yaml blocks under %q in docs/operations.md", n+1, heading)
	}
	return blocks[n][1]
}

// Apply creates every object of a multi-document YAML of cert-manager kinds (Resources) and
// returns them.
func Apply(ctx context.Context, t testing.TB, dc dynamic.Interface, doc string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			break
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvr, ok := Resources[obj.GetKind()]
		if !ok {
			t.Fatalf("no resource known for kind %s", obj.GetKind())
		}
		if _, err := dc.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		t.Fatalf("no objects in %q", doc)
	}
	return out
}
