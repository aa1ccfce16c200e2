// Package deptest checks what a binary links: a dependency test lists the packages of the
// binary's main package with `go list -deps` and fails on any it must not link.
package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// Forbid lists the dependencies of the package in the test's working directory (a command's
// main package), built with tags, and fails for each one that is, or is below, a key of
// unwanted; the value says why. binary names the command in the failures.
func Forbid(t *testing.T, binary string, tags []string, unwanted map[string]string) {
	t.Helper()
	args := []string{"list", "-deps"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	out, err := exec.Command("go", append(args, ".")...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps printed %d packages; expected %s's whole graph", len(deps), binary)
	}
	for _, dep := range deps {
		for prefix, why := range unwanted {
			if dep == prefix || strings.HasPrefix(dep, prefix+"/") {
				t.Errorf("%s links %s (%s)", binary, dep, why)
			}
		}
	}
}
