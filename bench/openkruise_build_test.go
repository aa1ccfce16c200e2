//go:build bench

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// OpenKruise, the reference the launch-priority benchmark compares with: its kruise-manager is
// built from the Go module proxy (never copied into this repository) in a throwaway module of
// the benchmark's cache directory, kept between runs.
const (
	openKruiseModule  = "github.com/openkruise/kruise"
	openKruiseVersion = "v1.9.0"
)

var openKruiseCache = envStr("BENCH_OPENKRUISE_DIR", "/var/tmp/kruise-bench-cache/openkruise-"+openKruiseVersion)

// openKruiseBuild is a built kruise-manager and the module's source directory (for its CRDs).
type openKruiseBuild struct {
	bin string
	src string
}

// buildOpenKruise builds kruise-manager (the module's main package) unless the cache has it.
// The throwaway module requires OpenKruise at the version and takes over its go.mod's replace
// directives, which a dependency's go.mod cannot impose; GONOSUMDB lets the go command fetch it
// without the checksum database.
func buildOpenKruise(ctx context.Context, logf func(string, ...any)) (openKruiseBuild, error) {
	dir := openKruiseCache
	b := openKruiseBuild{bin: filepath.Join(dir, "bin", "kruise-manager")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return b, err
	}
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GONOSUMDB="+openKruiseModule, "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); os.IsNotExist(err) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module kruisebench/openkruise\n\ngo 1.23.0\n"), 0o644); err != nil {
			return b, err
		}
	}
	out, err := goCmd("mod", "download", "-json", openKruiseModule+"@"+openKruiseVersion)
	if err != nil {
		return b, err
	}
	var dl struct{ Dir, GoMod string }
	if err := json.Unmarshal(out, &dl); err != nil {
		return b, fmt.Errorf("go mod download: %w", err)
	}
	b.src = dl.Dir
	if _, err := os.Stat(b.bin); err == nil {
		logf("OpenKruise %s: cached %s", openKruiseVersion, b.bin)
		return b, nil
	}

	out, err = goCmd("mod", "edit", "-json", dl.GoMod)
	if err != nil {
		return b, err
	}
	var gomod struct {
		Replace []struct {
			Old, New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		return b, fmt.Errorf("reading %s: %w", dl.GoMod, err)
	}
	args := []string{"mod", "edit", "-require=" + openKruiseModule + "@" + openKruiseVersion}
	at := func(p, v string) string {
		if v == "" {
			return p
		}
		return p + "@" + v
	}
	for _, r := range gomod.Replace {
		args = append(args, "-replace="+at(r.Old.Path, r.Old.Version)+"="+at(r.New.Path, r.New.Version))
	}
	if _, err := goCmd(args...); err != nil {
		return b, err
	}
	logf("OpenKruise %s: building kruise-manager in %s (minutes the first time)", openKruiseVersion, dir)
	if _, err := goCmd("build", "-trimpath", "-o", b.bin, openKruiseModule); err != nil {
		return b, err
	}
	return b, nil
}
