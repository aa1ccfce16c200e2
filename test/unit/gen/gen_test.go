package gen

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNotLinkedByBinaries fails when a binary of the repo links this
// package: it is test code, for fakes.
func TestNotLinkedByBinaries(t *testing.T) {
	const self = "github.com/nodekruise/kruise/test/unit/gen"
	out, err := exec.Command("go", "list", "-deps", "github.com/nodekruise/kruise/cmd/...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps printed %d packages; expected the binaries' whole graph", len(deps))
	}
	for _, dep := range deps {
		if dep == self {
			t.Fatalf("a binary under cmd/ links %s", self)
		}
	}
}
