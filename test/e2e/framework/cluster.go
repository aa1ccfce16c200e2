package framework

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nodekruise/kruise/test/repo"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Components of the local cluster that hack/cluster.sh stops and starts one at a time.
const (
	// ComponentAPIServer is kube-apiserver.
	ComponentAPIServer = "kube-apiserver"
	// ComponentRuntime is containerd together with the recording CRI proxy the daemon dials: a
	// restart of both is what the daemon sees of a runtime restart (its connection drops).
	ComponentRuntime = "runtime"
)

// clusterScriptTimeout bounds one stop or start: the slowest stop is the API server's (SIGKILL
// after 30 s of draining), the slowest start containerd's or the API server's health wait.
const clusterScriptTimeout = 3 * time.Minute

// ClusterScript returns the path of hack/cluster.sh.
func ClusterScript(t testing.TB) string {
	t.Helper()
	return repo.Path(t, "hack", "cluster.sh")
}

func runClusterScript(ctx context.Context, t testing.TB, args ...string) (string, error) {
	t.Helper()
	script := ClusterScript(t)
	ctx, cancel := context.WithTimeout(ctx, clusterScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	// The components the script starts write to their own logs and run in their own session;
	// they never hold these pipes, so the call returns when the script does.
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("hack/cluster.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// StopComponent stops one component of the local cluster (SIGTERM, SIGKILL after the script's
// timeout) and makes sure it runs again when the test ends: a cleanup starts it if the test did
// not, then waits for the node to be Ready, so a failing test never leaves the cluster broken.
func (f *Framework) StopComponent(ctx context.Context, t testing.TB, name string) {
	t.Helper()
	// Registered first: a stop that fails half way must be undone too.
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), clusterScriptTimeout+2*time.Minute)
		defer cancel()
		if out, err := runClusterScript(cctx, t, "start", name); err != nil {
			t.Errorf("restoring %s after the test: %v", name, err)
			return
		} else if strings.Contains(out, "starting ") {
			t.Logf("restarted %s after the test: %s", name, strings.TrimSpace(out))
		}
		f.WaitNodeReady(cctx, t, 2*time.Minute)
	})
	out, err := runClusterScript(ctx, t, "stop", name)
	if err != nil {
		t.Fatalf("stopping %s: %v", name, err)
	}
	t.Logf("stopped %s: %s", name, strings.TrimSpace(out))
}

// StartComponent starts a component StopComponent stopped, with the command line of
// `hack/cluster.sh up`, and returns once the script found it healthy.
func (f *Framework) StartComponent(ctx context.Context, t testing.TB, name string) {
	t.Helper()
	out, err := runClusterScript(ctx, t, "start", name)
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Logf("started %s: %s", name, strings.TrimSpace(out))
}

// WaitNodeReady waits until the node under test (NodeName) reports Ready.
func (f *Framework) WaitNodeReady(ctx context.Context, t testing.TB, timeout time.Duration) {
	t.Helper()
	node := NodeName()
	WaitFor(ctx, t, timeout, "node "+node+" Ready", func(ctx context.Context) (bool, string, error) {
		n, err := f.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			// The API server may still be coming back: keep asking.
			return false, "", Retry(err)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message), nil
			}
		}
		return false, "no Ready condition", nil
	})
}

// ErrNoAnswer is what APIServerAnswers reports when nothing answers on the API server's address.
var ErrNoAnswer = errors.New("the API server does not answer")

// APIServerAnswers reports whether the API server answers a request now (any HTTP status, error
// or not, counts as an answer; only a failed connection does not).
func (f *Framework) APIServerAnswers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := f.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrNoAnswer, err)
}
