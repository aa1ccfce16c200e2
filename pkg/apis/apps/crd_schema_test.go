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
	crdDir = "../../../deploy/base/crds"
	// goldenFile is OpenKruise v1.9.0 as released (tag v1.9.0, commit b1e001a).
	goldenFile = "testdata/openkruise-v1.9.0-schemas.txt"
	// aheadFile holds the versions of kruiseOnlyVersions as OpenKruise's master has them at
	// 4c2bbce (what the Go module proxy calls v1.9.0).
	aheadFile = "testdata/openkruise-master-4c2bbce-v1beta1-schemas.txt"
)

func readGolden(t *testing.T, file string) map[string]*crdfacts.CRD {
	t.Helper()
	f, err := os.Open(file)
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

// kruiseOnlyVersions are the versions kruise serves, and stores, that OpenKruise v1.9.0 as
// released does not serve at all: the release serves and stores CloneSet and
// ContainerRecreateRequest as v1alpha1 only. OpenKruise's master adds v1beta1 as the storage
// version of both (where the reference is going); kruise serves it ahead of the release so
// that one stored version serves every workload (docs/api.md, "Versions and conversion"). A
// cluster moving from the release has these objects stored as v1alpha1; kruise's
// storage-version migrator rewrites them through /convert (test/integration/migration_test.go).
// Each version's fields are compared with aheadFile instead of goldenFile.
var kruiseOnlyVersions = map[string]string{
	"clonesets.apps.kruise.io":                 "v1beta1",
	"containerrecreaterequests.apps.kruise.io": "v1beta1",
}

// kruiseExtensions are the fields kruise adds to OpenKruise's schemas on
// purpose, by "<crd>/<version>", each documented in docs/api.md. Those in
// status only kruise writes, and OpenKruise's clients, which do not know
// them, drop them when they decode.
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
	// And the image pre-download settings (below).
	"statefulsets.apps.kruise.io/v1alpha1": append([]string{"status.updatedReadyReplicas", "status.updatedAvailableReplicas", "status.volumeClaims"},
		imagePreDownload("spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy")...),
	// The image pre-download settings as fields of the shared inPlaceUpdateStrategy, which
	// OpenKruise's master adds after the release (the release has only their annotations,
	// which kruise reads too); the field wins over the annotation (docs/cloneset.md).
	"statefulsets.apps.kruise.io/v1beta1": imagePreDownload("spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy"),
	"clonesets.apps.kruise.io/v1alpha1":   imagePreDownload("spec.updateStrategy.inPlaceUpdateStrategy"),
	// The same settings in a UnitedDeployment's CloneSet and Advanced StatefulSet templates.
	"uniteddeployments.apps.kruise.io/v1alpha1": append(
		imagePreDownload("spec.template.cloneSetTemplate.spec.updateStrategy.inPlaceUpdateStrategy"),
		imagePreDownload("spec.template.advancedStatefulSetTemplate.spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy")...),
}

// imagePreDownload are the pre-download fields of the inPlaceUpdateStrategy at path.
func imagePreDownload(path string) []string {
	return []string{path + ".imagePreDownloadParallelism", path + ".imagePreDownloadTimeoutSeconds",
		path + ".imagePreDownloadMinUpdatedReadyPods"}
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
	golden := readGolden(t, goldenFile)
	ahead := readGolden(t, aheadFile)
	ours := readOurCRDs(t)

	for name := range ours {
		require.Contains(t, golden, name, "CRD %s is not in %s", name, goldenFile)
	}
	for _, name := range slices.Sorted(maps.Keys(golden)) {
		t.Run(name, func(t *testing.T) {
			crd, ok := ours[name]
			if what, planned := notYetServed[name]; planned {
				require.False(t, ok, "%s is served now: take it off notYetServed", what)
				return
			}
			require.True(t, ok, "CRD %s not generated", name)
			want := withKruiseOnlyVersion(t, golden[name], ahead[name], kruiseOnlyVersions[name])
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

// withKruiseOnlyVersion is what kruise serves of release's CRD: the release's versions plus
// extra (when not empty), taken from ahead, as the only storage version.
func withKruiseOnlyVersion(t *testing.T, release, ahead *crdfacts.CRD, extra string) *crdfacts.CRD {
	t.Helper()
	if extra == "" {
		return release
	}
	_, served := release.Versions[extra]
	require.False(t, served, "OpenKruise's release serves %s now: take it off kruiseOnlyVersions", extra)
	require.NotNil(t, ahead, "%s has no %s in %s", release.Name, extra, aheadFile)
	require.Contains(t, ahead.Versions, extra, "%s has no %s in %s", release.Name, extra, aheadFile)
	require.Equal(t, release.Header, ahead.Header)
	out := &crdfacts.CRD{Name: release.Name, Header: release.Header,
		Versions: map[string]string{extra: ahead.Versions[extra]}, Fields: map[string][]string{extra: ahead.Fields[extra]}}
	for v, flags := range release.Versions {
		out.Versions[v] = strings.Replace(flags, "storage=true", "storage=false", 1)
		out.Fields[v] = release.Fields[v]
	}
	return out
}
