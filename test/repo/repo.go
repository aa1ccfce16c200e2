// Package repo locates files of this repository from a test, whatever package the test is in.
package repo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module is the path this repository's go.mod declares.
const module = "github.com/nodekruise/kruise"

// Path returns the file at the slash-free path elements under the repository root, found by walking
// up from the test's working directory (go test runs a test in its package's directory). Walking
// the file system rather than asking runtime.Caller keeps it right when tests are built with
// -trimpath, which leaves module paths, not file paths, in the binary.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// Root is the repository's root directory: the first directory at or above the working directory
// whose go.mod declares this module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if raw, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && declares(string(raw)) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", &notFoundError{dir: dir}
		}
	}
}

func declares(gomod string) bool {
	for _, line := range strings.Split(gomod, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == module {
			return true
		}
	}
	return false
}

type notFoundError struct{ dir string }

func (e *notFoundError) Error() string {
	return "no go.mod of module " + module + " in " + e.dir + " or any directory above it: run the test inside the repository"
}
