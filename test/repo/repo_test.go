package repo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPathFindsTheRootFromAPackageDirectory(t *testing.T) {
	p := Path(t, "hack", "cluster.sh")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Path(hack, cluster.sh) = %s: %v", p, err)
	}
	if filepath.Base(filepath.Dir(filepath.Dir(p))) == "test" {
		t.Fatalf("Path stopped below the root: %s", p)
	}
}

func TestRootSkipsAModuleOfAnotherPath(t *testing.T) {
	// A nested tool module (hack/tools/certmanager) has a go.mod of its own; the walk must pass it.
	if declares("module github.com/nodekruise/kruise/hack/tools/certmanager\n") {
		t.Fatal("a nested module's go.mod read as the repository's")
	}
	if !declares("// c\nmodule github.com/nodekruise/kruise\n\ngo 1.24\n") {
		t.Fatal("the repository's go.mod not recognised")
	}
}

func TestRootOutsideTheRepositorySaysSo(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := Root(); err == nil {
		t.Fatal("found a root outside the repository")
	}
}
