package framework

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nodekruise/kruise/test/repo"
)

// HelmRelease is the release `make e2e-helm` installs kruise as, in namespace default.
const HelmRelease = "kruise"

// Helm returns a runner of the helm binary named by $KRUISE_HELM (make e2e-helm sets it), with
// helm's cache and configuration in a temporary directory; a failing helm fails the test. It fails
// the test at once unless the release kruise exists.
func Helm(ctx context.Context, t testing.TB) func(args ...string) string {
	t.Helper()
	bin := os.Getenv("KRUISE_HELM")
	if bin == "" {
		t.Fatal("KRUISE_HELM is not set: run this test with `make e2e-helm`")
	}
	helm := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		tmp := t.TempDir()
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+tmp, "HELM_CONFIG_HOME="+tmp, "HELM_DATA_HOME="+tmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := helm("list", "--namespace", "default", "--short"); !strings.Contains(out, HelmRelease) {
		t.Fatalf("no Helm release %s (helm list: %q): run `make e2e-helm`", HelmRelease, out)
	}
	return helm
}

// ChartDir is the Helm chart of this repository, deploy/charts/kruise.
func ChartDir(t testing.TB) string {
	t.Helper()
	return repo.Path(t, "deploy", "charts", "kruise")
}
