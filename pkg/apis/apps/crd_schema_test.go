// Package apps_test checks the generated CRDs against OpenKruise's schemas.
package apps_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/test/crdfacts"
)

const (
	crdDir     = "../../../deploy/base/crds"
	goldenFile = "testdata/openkruise-v1.9.0-schemas.txt"
)

func readGolden(t *testing.T) map[string]*crdfacts.CRD {
	t.Helper()
	f, err := os.Open(goldenFile)
	require.NoError(t, err)
	defer f.Close()
	out, err := crdfacts.Read(f)
	require.NoError(t, err)
	return out
}

func readOurCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(crdDir, "apps.kruise.io_*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no CRDs in %s; run hack/update-codegen.sh", crdDir)
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(raw, crd), f)
		out[crd.Name] = crd
	}
	return out
}

// notYetServed are the CRDs of the golden file kruise does not serve yet,
// with the issue that adds each. Once one is served it is compared like
// the others, and must leave this list.
var notYetServed = map[string]string{}

// kruiseExtensions are the fields kruise adds to OpenKruise's schemas on
// purpose, by "<crd>/<version>", each documented in docs/api.md. They live
// in status, only kruise writes them, and OpenKruise's clients, which do
// not know them, drop them when they decode.
var kruiseExtensions = map[string][]string{
	// The Admitted condition and the creation revision (docs/api.md,
	// "ContainerRecreateRequest").
	"containerrecreaterequests.apps.kruise.io/v1alpha1": {"status.conditions", "status.creationRevision", "status.containerStatusSnapshot"},
	"containerrecreaterequests.apps.kruise.io/v1beta1":  {"status.creationRevision"},
	// Why each failed node failed (docs/api.md, "ImagePullJob and ImageListPullJob").
	"imagepulljobs.apps.kruise.io/v1alpha1": {"status.failures", "status.omittedFailures"},
	"imagepulljobs.apps.kruise.io/v1beta1":  {"status.failures", "status.omittedFailures"},
	// v1beta1's status counts, so that status converts losslessly
	// (docs/api.md, "Advanced StatefulSet").
	"statefulsets.apps.kruise.io/v1alpha1": {"status.updatedReadyReplicas", "status.updatedAvailableReplicas", "status.volumeClaims"},
}

// withoutExtensions drops from lines the fields under the given paths.
func withoutExtensions(lines, paths []string) []string {
	var out []string
	for _, l := range lines {
		field, _, _ := strings.Cut(l, " ")
		ext := false
		for _, p := range paths {
			if field == p || strings.HasPrefix(field, p+".") || strings.HasPrefix(field, p+"[") {
				ext = true
			}
		}
		if !ext {
			out = append(out, l)
		}
	}
	return out
}

func TestCRDSchemasMatchOpenKruise(t *testing.T) {
	golden := readGolden(t)
	ours := readOurCRDs(t)

	for name := range ours {
		require.Contains(t, golden, name, "CRD %s is not in %s", name, goldenFile)
	}
	for _, name := range slices.Sorted(maps.Keys(golden)) {
		want := golden[name]
		t.Run(name, func(t *testing.T) {
			crd, ok := ours[name]
			if what, planned := notYetServed[name]; planned {
				require.False(t, ok, "%s is served now: take it off notYetServed", what)
				return
			}
			require.True(t, ok, "CRD %s not generated", name)
			got := crdfacts.Of(crd)
			require.Equal(t, want.Header, got.Header)
			require.Equal(t, want.Versions, got.Versions, "served/storage versions differ")
			for _, v := range slices.Sorted(maps.Keys(got.Fields)) {
				missing, extra := crdfacts.Diff(want.Fields[v], withoutExtensions(got.Fields[v], kruiseExtensions[name+"/"+v]))
				require.Empty(t, missing, "%s: fields missing or typed differently (golden line shown)", v)
				require.Empty(t, extra, "%s: fields not in OpenKruise or typed differently", v)
			}
		})
	}
}
