// Package apps_test checks the generated CRDs against OpenKruise's schemas.
package apps_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const (
	crdDir     = "../../../deploy/base/crds"
	goldenFile = "testdata/openkruise-v1.9.0-schemas.txt"
)

// crdFacts is what the golden file records about one CRD.
type crdFacts struct {
	header   string              // "kind=... scope=... short=..."
	versions map[string]string   // version -> "served=... storage=..."
	fields   map[string][]string // version -> sorted "path type [enum=...]" lines
}

func readGolden(t *testing.T) map[string]*crdFacts {
	t.Helper()
	f, err := os.Open(goldenFile)
	require.NoError(t, err)
	defer f.Close()

	out := map[string]*crdFacts{}
	var cur *crdFacts
	var version string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "crd":
			name, header, _ := strings.Cut(rest, " ")
			cur = &crdFacts{header: header, versions: map[string]string{}, fields: map[string][]string{}}
			out[name] = cur
		case "version":
			require.NotNil(t, cur, "version line before any crd line")
			var flags string
			version, flags, _ = strings.Cut(rest, " ")
			cur.versions[version] = flags
		default:
			require.NotEmpty(t, version, "field line before any version line: %q", line)
			cur.fields[version] = append(cur.fields[version], line)
		}
	}
	require.NoError(t, sc.Err())
	for _, c := range out {
		for v := range c.fields {
			sort.Strings(c.fields[v])
		}
	}
	return out
}

// flatten lists every field of a schema as "path type[:format] [enum=...]".
func flatten(s *apiextensionsv1.JSONSchemaProps, path string, out *[]string) {
	typ := s.Type
	if s.XIntOrString {
		typ = "int-or-string"
	}
	if s.Format != "" {
		typ += ":" + s.Format
	}
	if path != "" {
		line := path + " " + typ
		if len(s.Enum) > 0 {
			vals := make([]string, len(s.Enum))
			for i, e := range s.Enum {
				vals[i] = strings.Trim(string(e.Raw), `"`)
			}
			line += " enum=" + strings.Join(vals, ",")
		}
		*out = append(*out, line)
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for k, p := range s.Properties {
		if path == "" && (k == "apiVersion" || k == "kind" || k == "metadata") {
			continue
		}
		flatten(&p, join(k), out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		flatten(s.Items.Schema, path+"[]", out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		flatten(s.AdditionalProperties.Schema, path+"{}", out)
	}
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

// diff returns the lines only in want (missing) and only in got (extra).
func diff(want, got []string) (missing, extra []string) {
	w := map[string]bool{}
	for _, l := range want {
		w[l] = true
	}
	g := map[string]bool{}
	for _, l := range got {
		g[l] = true
		if !w[l] {
			extra = append(extra, l)
		}
	}
	for _, l := range want {
		if !g[l] {
			missing = append(missing, l)
		}
	}
	return missing, extra
}

// kruiseExtensions are the fields kruise adds to OpenKruise's schemas on
// purpose, by "<crd>/<version>", each documented in docs/api.md. They live
// in status, only kruise writes them, and OpenKruise's clients, which do
// not know them, drop them when they decode.
var kruiseExtensions = map[string][]string{
	// The Admitted condition and the creation revision (docs/api.md,
	// "ContainerRecreateRequest").
	"containerrecreaterequests.apps.kruise.io/v1alpha1": {"status.conditions", "status.creationRevision"},
	// Why each failed node failed (docs/api.md, "ImagePullJob and ImageListPullJob").
	"imagepulljobs.apps.kruise.io/v1alpha1": {"status.failures", "status.omittedFailures"},
	"imagepulljobs.apps.kruise.io/v1beta1":  {"status.failures", "status.omittedFailures"},
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

	var names []string
	for n := range golden {
		names = append(names, n)
	}
	sort.Strings(names)
	require.Len(t, ours, len(golden), "a CRD too many or too few in %s", crdDir)

	for _, name := range names {
		want := golden[name]
		t.Run(name, func(t *testing.T) {
			crd, ok := ours[name]
			require.True(t, ok, "CRD %s not generated", name)

			header := fmt.Sprintf("kind=%s scope=%s", crd.Spec.Names.Kind, crd.Spec.Scope)
			if len(crd.Spec.Names.ShortNames) > 0 {
				header += " short=" + strings.Join(crd.Spec.Names.ShortNames, ",")
			}
			require.Equal(t, want.header, header)

			got := map[string]string{}
			for _, v := range crd.Spec.Versions {
				got[v.Name] = fmt.Sprintf("served=%t storage=%t", v.Served, v.Storage)
			}
			require.Equal(t, want.versions, got, "served/storage versions differ")

			for _, v := range crd.Spec.Versions {
				var fields []string
				flatten(v.Schema.OpenAPIV3Schema, "", &fields)
				sort.Strings(fields)
				missing, extra := diff(want.fields[v.Name], withoutExtensions(fields, kruiseExtensions[name+"/"+v.Name]))
				require.Empty(t, missing, "%s: fields missing or typed differently (golden line shown)", v.Name)
				require.Empty(t, extra, "%s: fields not in OpenKruise or typed differently", v.Name)
			}
		})
	}
}
