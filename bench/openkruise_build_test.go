//go:build bench

package bench

import (
	"context"
	"path/filepath"

	"github.com/nodekruise/kruise/test/reference"
)

// OpenKruise, the reference the launch-priority and rollout benchmarks compare with: its
// kruise-manager is built from the Go module proxy (never copied into this repository) in a
// throwaway module of the benchmark's cache directory, kept between runs (test/reference, which
// builds the reference's e2e suite the same way).
var openKruiseCache = envStr("BENCH_OPENKRUISE_DIR", "/var/tmp/kruise-bench-cache/openkruise-"+reference.Version)

// openKruiseBuild is a built kruise-manager and the module's source directory (for its CRDs).
type openKruiseBuild struct {
	bin string
	src string
}

// buildOpenKruise builds kruise-manager (the module's main package) unless the cache has it.
func buildOpenKruise(ctx context.Context, logf func(string, ...any)) (openKruiseBuild, error) {
	b, err := reference.BuildPackage(ctx, reference.BuildOptions{
		Dir: openKruiseCache, Package: reference.Module,
		Out: filepath.Join(openKruiseCache, "bin", "kruise-manager"), Logf: logf,
	})
	return openKruiseBuild{bin: b.Bin, src: b.Src}, err
}
