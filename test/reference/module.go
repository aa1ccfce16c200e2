// Package reference runs OpenKruise, the project kruise is measured against, from its Go module:
// it builds the reference's binaries and its e2e suite in a throwaway module (never copying its
// source into this repository), and classifies the suite's results against a checked-in list of
// known differences and environment limits (known.yaml).
package reference

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

const (
	// Module is OpenKruise's Go module.
	Module = "github.com/openkruise/kruise"
	// Version is the release kruise is compared with. The module proxy's v1.9.0 is master
	// commit 4c2bbce, a sibling of the tag's release commit b1e001a; the e2e suite and the
	// binaries are the same in both for what kruise implements.
	Version = "v1.9.0"
	// E2EPackage is the reference's e2e suite (a Ginkgo suite in a test binary).
	E2EPackage = Module + "/test/e2e"
)

// Build is a package of the reference built in a throwaway module.
type Build struct {
	// Bin is the built binary.
	Bin string
	// Src is the reference module's source directory in the module cache (CRDs, manifests).
	Src string
}

// BuildOptions say what to build where.
type BuildOptions struct {
	// Dir is the throwaway module's directory, kept between runs as the cache.
	Dir string
	// Package is the import path to build: Module for kruise-manager, E2EPackage for the suite.
	Package string
	// Out is the binary's path.
	Out string
	// Test builds the package's test binary (go test -c) instead of its command.
	Test bool
	// Logf reports progress; nil is quiet.
	Logf func(string, ...any)
}

// BuildPackage builds opts.Package of the reference at Version unless opts.Out exists already.
// The throwaway module requires the reference and takes over its go.mod's replace directives
// (k8s.io/* pinned to v0.32.10 among them), which a dependency's go.mod cannot impose;
// GONOSUMDB lets the go command fetch it without the checksum database.
func BuildPackage(ctx context.Context, opts BuildOptions) (Build, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	b := Build{Bin: opts.Out}
	dir := opts.Dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return b, err
	}
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GONOSUMDB="+Module, "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); os.IsNotExist(err) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module kruise.local/openkruise\n\ngo 1.23.0\n"), 0o644); err != nil {
			return b, err
		}
	}
	out, err := goCmd("mod", "download", "-json", Module+"@"+Version)
	if err != nil {
		return b, err
	}
	var dl struct{ Dir, GoMod string }
	if err := json.Unmarshal(out, &dl); err != nil {
		return b, fmt.Errorf("go mod download: %w", err)
	}
	b.Src = dl.Dir
	if _, err := os.Stat(b.Bin); err == nil {
		logf("OpenKruise %s: cached %s", Version, b.Bin)
		return b, nil
	}

	out, err = goCmd("mod", "edit", "-json", dl.GoMod)
	if err != nil {
		return b, err
	}
	var gomod struct{ Replace []replace }
	if err := json.Unmarshal(out, &gomod); err != nil {
		return b, fmt.Errorf("reading %s: %w", dl.GoMod, err)
	}
	if _, err := goCmd(editArgs(gomod.Replace)...); err != nil {
		return b, err
	}
	logf("OpenKruise %s: building %s in %s (minutes the first time)", Version, opts.Package, dir)
	// Built under a temporary name and renamed, so an interrupted build never looks cached.
	tmp := b.Bin + ".tmp"
	args := []string{"build", "-trimpath", "-o", tmp, opts.Package}
	if opts.Test {
		args = []string{"test", "-c", "-trimpath", "-o", tmp, opts.Package}
	}
	if err := os.MkdirAll(filepath.Dir(b.Bin), 0o755); err != nil {
		return b, err
	}
	if _, err := goCmd(args...); err != nil {
		return b, err
	}
	return b, os.Rename(tmp, b.Bin)
}

// replace is a replace directive as go mod edit -json prints it.
type replace struct {
	Old, New struct{ Path, Version string }
}

// editArgs is the go mod edit that requires the reference and copies its replaces.
func editArgs(replaces []replace) []string {
	at := func(p, v string) string {
		if v == "" {
			return p
		}
		return p + "@" + v
	}
	args := []string{"mod", "edit", "-require=" + Module + "@" + Version}
	for _, r := range replaces {
		args = append(args, "-replace="+at(r.Old.Path, r.Old.Version)+"="+at(r.New.Path, r.New.Version))
	}
	return args
}
