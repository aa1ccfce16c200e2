package framework

import (
	"fmt"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// EmptySidecarScript is what EmptySidecarImage runs: nothing, until SIGTERM.
const EmptySidecarScript = "trap 'exit 0' TERM; while true; do sleep 1; done"

// EmptySidecarImage pushes, under a new public/ repository, busybox with an entrypoint that runs
// EmptySidecarScript and ignores its arguments: the hotUpgradeEmptyImage of a HotUpgrade sidecar
// whose container gives args (not command), as OpenKruise's hot-upgrade samples do. It returns
// the new reference.
func (f *Framework) EmptySidecarImage(t testing.TB) string {
	t.Helper()
	return f.pushDerived(t, "public/busybox:1.35", 2*time.Minute, func(base v1.Image) (v1.Image, error) {
		cfg, err := base.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("reading the image config: %w", err)
		}
		c := cfg.Config.DeepCopy()
		// sh -c SCRIPT NAME ARGS...: the container's args become positional parameters, unused.
		c.Entrypoint = []string{"sh", "-c", EmptySidecarScript, "empty"}
		c.Cmd = nil
		return mutate.Config(base, *c)
	})
}
