package framework

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// EmptySidecarScript is what EmptySidecarImage runs: nothing, until SIGTERM.
const EmptySidecarScript = "trap 'exit 0' TERM; while true; do sleep 1; done"

// EmptySidecarImage pushes, under a new public/ repository, busybox with an entrypoint that runs
// EmptySidecarScript and ignores its arguments: the hotUpgradeEmptyImage of a HotUpgrade sidecar
// whose container gives args (not command), as OpenKruise's hot-upgrade samples do. It returns
// the new reference.
func (f *Framework) EmptySidecarImage(t testing.TB) string {
	t.Helper()
	src, err := name.ParseReference(f.Image("public/busybox:1.35"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base, err := remote.Image(src, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("reading %s: %v", src, err)
	}
	cfg, err := base.ConfigFile()
	if err != nil {
		t.Fatalf("reading the config of %s: %v", src, err)
	}
	c := cfg.Config.DeepCopy()
	// sh -c SCRIPT NAME ARGS...: the container's args become positional parameters, unused.
	c.Entrypoint = []string{"sh", "-c", EmptySidecarScript, "empty"}
	c.Cmd = nil
	img, err := mutate.Config(base, *c)
	if err != nil {
		t.Fatal(err)
	}
	ref := f.UniqueImage("public/")
	dst, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dst, img, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return ref
}
