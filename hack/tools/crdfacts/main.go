// Command crdfacts writes down OpenKruise's CRDs (its config/crd/bases) field by field for the
// golden test pkg/apis/apps/crd_schema_test.go, for the CRDs kruise serves or will serve.
//
// The baseline is OpenKruise v1.9.0 as released: the repository's tag v1.9.0, commit b1e001a
// ("changelog 1.9.0"). The Go module proxy's v1.9.0 is another commit (4c2bbce, master of the
// same day, not a descendant of the tag), which serves CloneSet and ContainerRecreateRequest as
// v1beta1 too; kruise serves those v1beta1 versions ahead of the release, and the test checks them
// against that master commit's schemas, kept in a second, smaller file (-only). Re-take both with:
//
//	git -C <openkruise clone> archive v1.9.0 config/crd/bases | tar -x -C <tag>
//	go run ./hack/tools/crdfacts -ref <tag>/config/crd/bases -source "tag v1.9.0 (b1e001a)" \
//	    -golden pkg/apis/apps/testdata/openkruise-v1.9.0-schemas.txt
//	git -C <openkruise clone> archive 4c2bbce config/crd/bases | tar -x -C <master>
//	go run ./hack/tools/crdfacts -ref <master>/config/crd/bases -source "master 4c2bbce" \
//	    -only clonesets/v1beta1,containerrecreaterequests/v1beta1 \
//	    -golden pkg/apis/apps/testdata/openkruise-master-4c2bbce-v1beta1-schemas.txt
//
// OpenKruise's CRDs declare almost no enums (its webhooks check its Go constants); the enums the
// file being rewritten records are kept, per version, and carried over to a version the old file
// lacks from the other versions of the same CRD.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/test/crdfacts"
)

// recorded are the CRDs kruise serves or has an issue to serve.
var recorded = []string{
	"containerrecreaterequests", "imagepulljobs", "imagelistpulljobs", "nodeimages",
	"clonesets", "statefulsets", "daemonsets", "sidecarsets", "workloadspreads",
	"broadcastjobs", "advancedcronjobs", "ephemeraljobs",
	"podprobemarkers", "nodepodprobes",
	"uniteddeployments", "persistentpodstates", "resourcedistributions",
}

const header = `# apps.kruise.io CRD schemas of OpenKruise %s
# (config/crd/bases/apps.kruise.io_*.yaml), written down field by field for the golden test in
# crd_schema_test.go: %s.
# Written by hack/tools/crdfacts, whose doc comment says how to re-take this file.
#   crd <name> kind=<Kind> scope=<scope> [short=<a,b>]
#   version <name> served=<bool> storage=<bool>
#   <path> <type>[:<format>] [enum=<v1,v2>]     ([] = list item, {} = map value)
# OpenKruise's v1alpha1 CRDs declare no enums; the enum values below are its Go
# constants: in spec, those its admission webhook enforces (failurePolicy,
# completionPolicy.type), which the schema enforces here; in status, the values
# kruise writes (no webhook sees status). A spec field OpenKruise's webhook takes
# as any string (imagePullPolicy) has no enum here either.
`

func main() {
	ref := flag.String("ref", "", "OpenKruise's config/crd/bases directory")
	golden := flag.String("golden", "", "the golden file to rewrite")
	source := flag.String("source", "", `which OpenKruise the CRDs are, e.g. "tag v1.9.0 (b1e001a)"`)
	only := flag.String("only", "", "record only these <plural>/<version>s, comma-separated (default: every version of every recorded CRD)")
	flag.Parse()
	if err := run(*ref, *golden, *source, *only); err != nil {
		fmt.Fprintln(os.Stderr, "crdfacts:", err)
		os.Exit(1)
	}
}

func run(ref, golden, source, only string) error {
	if ref == "" || golden == "" || source == "" {
		return fmt.Errorf("-ref, -golden and -source are required")
	}
	old := map[string]*crdfacts.CRD{}
	if f, err := os.Open(golden); err == nil {
		old, err = crdfacts.Read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", golden, err)
		}
	}
	var keep map[string][]string // plural -> versions; nil keeps everything
	scope := "every version OpenKruise serves of each kind kruise serves or will serve"
	if only != "" {
		keep = map[string][]string{}
		for _, pv := range strings.Split(only, ",") {
			plural, version, ok := strings.Cut(strings.TrimSpace(pv), "/")
			if !ok || !slices.Contains(recorded, plural) {
				return fmt.Errorf("-only: %q is not <recorded plural>/<version>", pv)
			}
			keep[plural] = append(keep[plural], version)
		}
		scope = "only " + strings.ReplaceAll(only, ",", ", ")
	}
	out := map[string]*crdfacts.CRD{}
	for _, plural := range recorded {
		if keep != nil && keep[plural] == nil {
			continue
		}
		path := filepath.Join(ref, "apps.kruise.io_"+plural+".yaml")
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		facts := crdfacts.Of(crd)
		if keep != nil {
			for v := range facts.Versions {
				if !slices.Contains(keep[plural], v) {
					delete(facts.Versions, v)
					delete(facts.Fields, v)
				}
			}
			if len(facts.Versions) != len(keep[plural]) {
				return fmt.Errorf("%s: -only names a version it does not have", path)
			}
		}
		if prev := old[facts.Name]; prev != nil {
			for v, lines := range facts.Fields {
				facts.Fields[v] = crdfacts.WithEnums(lines, knownEnums(prev, v))
			}
		}
		out[facts.Name] = facts
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, header, source, scope)
	if err := crdfacts.Write(&b, out); err != nil {
		return err
	}
	return os.WriteFile(golden, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644)
}

// knownEnums are the lines of prev to take version's enums from: that version's own when prev
// records it (another version may give the same path other values), else every version's.
func knownEnums(prev *crdfacts.CRD, version string) []string {
	if lines, ok := prev.Fields[version]; ok {
		return lines
	}
	var known []string
	for _, v := range slices.Sorted(maps.Keys(prev.Fields)) {
		known = append(known, prev.Fields[v]...)
	}
	return known
}
