// Command crdfacts rewrites pkg/apis/apps/testdata/openkruise-v1.9.0-schemas.txt
// from OpenKruise's CRDs (its module's config/crd/bases), for the CRDs kruise
// serves or will serve. OpenKruise's CRDs declare no enums (its webhooks
// check its Go constants); the enums the old file records are kept, and
// carried over to a version of the same CRD that lacks them.
//
//	GONOSUMDB=github.com/openkruise/kruise go mod download -json github.com/openkruise/kruise@v1.9.0
//	go run ./hack/tools/crdfacts -ref <Dir>/config/crd/bases -golden pkg/apis/apps/testdata/openkruise-v1.9.0-schemas.txt
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/test/crdfacts"
)

// recorded are the CRDs kruise serves or has an issue to serve.
var recorded = []string{
	"containerrecreaterequests", "imagepulljobs", "imagelistpulljobs", "nodeimages",
	"clonesets", "statefulsets", "daemonsets", "sidecarsets",
}

const header = `# apps.kruise.io CRD schemas of OpenKruise v1.9.0 (config/crd/bases/apps.kruise.io_*.yaml),
# written down field by field for the golden test in crd_schema_test.go; every version OpenKruise
# serves of each kind kruise serves or will serve. Written by hack/tools/crdfacts.
#   crd <name> kind=<Kind> scope=<scope> [short=<a,b>]
#   version <name> served=<bool> storage=<bool>
#   <path> <type>[:<format>] [enum=<v1,v2>]     ([] = list item, {} = map value)
# OpenKruise's CRDs declare no enums; the enum values below are its Go constants,
# which a webhook enforces there and the schema enforces here.
`

func main() {
	ref := flag.String("ref", "", "OpenKruise's config/crd/bases directory")
	golden := flag.String("golden", "", "the golden file to rewrite")
	flag.Parse()
	if err := run(*ref, *golden); err != nil {
		fmt.Fprintln(os.Stderr, "crdfacts:", err)
		os.Exit(1)
	}
}

func run(ref, golden string) error {
	if ref == "" || golden == "" {
		return fmt.Errorf("-ref and -golden are required")
	}
	old := map[string]*crdfacts.CRD{}
	if f, err := os.Open(golden); err == nil {
		old, err = crdfacts.Read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", golden, err)
		}
	}
	out := map[string]*crdfacts.CRD{}
	for _, plural := range recorded {
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
		if prev := old[facts.Name]; prev != nil {
			var known []string
			for _, lines := range prev.Fields {
				known = append(known, lines...)
			}
			for v, lines := range facts.Fields {
				facts.Fields[v] = crdfacts.WithEnums(lines, known)
			}
		}
		out[facts.Name] = facts
	}
	var b bytes.Buffer
	b.WriteString(header)
	if err := crdfacts.Write(&b, out); err != nil {
		return err
	}
	return os.WriteFile(golden, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644)
}
