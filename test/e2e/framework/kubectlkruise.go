package framework

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// KubectlKruisePlugin runs the kubectl-kruise binary built from this repository against the
// cluster in KUBECONFIG.
type KubectlKruisePlugin struct {
	// Path is the binary's path.
	Path string
}

// pluginBuild is the plugin built for the tests using it now: built by the first, removed when
// the last one ends (go's build cache makes a rebuild for a later test a link only).
var pluginBuild struct {
	sync.Mutex
	dir   string
	users int
}

// KubectlKruise builds cmd/kubectl-kruise once for all the tests that use it at the same time
// (parallel tests share one build) and returns a runner of it; the binary is removed when the
// last of them ends.
func KubectlKruise(t testing.TB) *KubectlKruisePlugin {
	t.Helper()
	pluginBuild.Lock()
	defer pluginBuild.Unlock()
	if pluginBuild.users == 0 {
		dir, err := os.MkdirTemp("", "kubectl-kruise-e2e-")
		if err != nil {
			t.Fatalf("building kubectl-kruise: %v", err)
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-kruise"), "github.com/nodekruise/kruise/cmd/kubectl-kruise").CombinedOutput()
		if err != nil {
			_ = os.RemoveAll(dir)
			t.Fatalf("building kubectl-kruise: %v\n%s", err, out)
		}
		pluginBuild.dir = dir
	}
	pluginBuild.users++
	dir := pluginBuild.dir
	t.Cleanup(func() {
		pluginBuild.Lock()
		defer pluginBuild.Unlock()
		if pluginBuild.users--; pluginBuild.users == 0 {
			_ = os.RemoveAll(pluginBuild.dir)
		}
	})
	return &KubectlKruisePlugin{Path: filepath.Join(dir, "kubectl-kruise")}
}

// Command is the plugin run with args, KUBECONFIG inherited.
func (k *KubectlKruisePlugin) Command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, k.Path, args...)
}

// Run runs the plugin with args and returns its combined output and its error (an
// *exec.ExitError when it exits non-zero).
func (k *KubectlKruisePlugin) Run(ctx context.Context, args ...string) (string, error) {
	out, err := k.Command(ctx, args...).CombinedOutput()
	return string(out), err
}

// MustRun runs the plugin with args and fails the test, with the output, when it fails.
func (k *KubectlKruisePlugin) MustRun(ctx context.Context, t testing.TB, args ...string) string {
	t.Helper()
	out, err := k.Run(ctx, args...)
	if err != nil {
		t.Fatalf("kubectl-kruise %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
