// Package golden compares a test's output with a file under testdata/ and,
// run with -update, rewrites the file instead. The kubectl-kruise command
// groups each had a copy of this; the -update flag can be registered only
// once per test binary, so it lives here.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the output the tests got")

// Assert fails t unless got equals testdata/<name>.golden. With -update it
// writes got to that file and passes.
func Assert(t testing.TB, name, got string) {
	t.Helper()
	assert(t, filepath.Join("testdata", name+".golden"), got, *update)
}

func assert(t testing.TB, path, got string, rewrite bool) {
	t.Helper()
	if rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("rewriting %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", path, err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
