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

// pluginBuild builds the plugin once per test binary, whichever test asks first.
var pluginBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// KubectlKruise builds cmd/kubectl-kruise once per test binary (into a directory that outlives
// the test asking first, so that every test reuses it) and returns a runner of it.
func KubectlKruise(t testing.TB) *KubectlKruisePlugin {
	t.Helper()
	pluginBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "kubectl-kruise-e2e-")
		if err != nil {
			pluginBuild.err = err
			return
		}
		pluginBuild.path = filepath.Join(dir, "kubectl-kruise")
		cmd := exec.Command("go", "build", "-o", pluginBuild.path, "github.com/nodekruise/kruise/cmd/kubectl-kruise")
		pluginBuild.out, pluginBuild.err = cmd.CombinedOutput()
	})
	if pluginBuild.err != nil {
		t.Fatalf("building kubectl-kruise: %v\n%s", pluginBuild.err, pluginBuild.out)
	}
	return &KubectlKruisePlugin{Path: pluginBuild.path}
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
