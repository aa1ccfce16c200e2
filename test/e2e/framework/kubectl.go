package framework

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kubectlVersion is the Kubernetes release hack/build-k8s.sh puts its binaries under.
const kubectlVersion = "v1.34.10"

// kubectlBinary is $KRUISE_KUBECTL, else the kubectl `make deps` built into kruise's cache, else
// the one on PATH.
func kubectlBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("KRUISE_KUBECTL"); bin != "" {
		return bin
	}
	if home, err := os.UserHomeDir(); err == nil {
		cache := envOr("KRUISE_CACHE", filepath.Join(home, ".cache", "kruise"))
		bin := filepath.Join(cache, "k8s", kubectlVersion, "bin", "kubectl")
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("no kubectl: set KRUISE_KUBECTL, or run `make deps`")
	}
	return bin
}

// Kubectl returns a runner of the kubectl binary against the cluster in KUBECONFIG; a failing
// kubectl fails the test, with its output.
func Kubectl(ctx context.Context, t testing.TB) func(args ...string) string {
	t.Helper()
	bin := kubectlBinary(t)
	return func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// KubectlCommand is the kubectl binary with args, against the cluster in KUBECONFIG, for a test
// that runs it in the background or reads its output as it goes.
func KubectlCommand(ctx context.Context, t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	return exec.CommandContext(ctx, kubectlBinary(t), args...)
}
