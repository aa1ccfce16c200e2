package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestAssert(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		path       string
		got        string
		rewrite    bool
		wantFailed bool
		wantFile   string
	}{
		{name: "same", path: path, got: "a\n", wantFile: "a\n"},
		{name: "differs", path: path, got: "b\n", wantFailed: true, wantFile: "a\n"},
		{name: "missing file", path: filepath.Join(dir, "none.golden"), got: "a\n", wantFailed: true},
		{name: "rewritten", path: path, got: "c\n", rewrite: true, wantFile: "c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			assert(r, tt.path, tt.got, tt.rewrite)
			if r.failed != tt.wantFailed {
				t.Errorf("failed = %v, want %v", r.failed, tt.wantFailed)
			}
			if tt.wantFile == "" {
				return
			}
			data, err := os.ReadFile(tt.path)
			if err != nil || string(data) != tt.wantFile {
				t.Errorf("file = %q, %v; want %q", data, err, tt.wantFile)
			}
		})
	}
}
