package framework

import (
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The package comment indexes the files by topic, so that a newcomer finds a helper by its
// subject; the index must name every file of the package and no file that is gone.
func TestPackageCommentIndexesEveryFile(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "framework.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	indexed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\t([a-z_]+\.go) `).FindAllStringSubmatch(f.Doc.Text(), -1) {
		indexed[m[1]] = true
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if !indexed[n] {
			missing = append(missing, n)
		}
		delete(indexed, n)
	}
	var gone []string
	for n := range indexed {
		gone = append(gone, n)
	}
	sort.Strings(gone)
	if len(missing) > 0 || len(gone) > 0 {
		t.Errorf("the package comment in framework.go does not index %v and indexes files that are gone: %v", missing, gone)
	}
}
