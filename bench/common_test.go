//go:build bench

package bench

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Settings shared by the benchmarks, all overridable from the environment.
var (
	iterations  = envInt("BENCH_ITERATIONS", 20)
	criEndpoint = envStr("BENCH_CRI_ENDPOINT", "/var/tmp/kruise-local/containerd/containerd.sock")
	image       = envStr("BENCH_IMAGE", "127.0.0.1:5000/public/busybox:1.35")
)

// graceSeconds is the benchmark pods' terminationGracePeriodSeconds (and, in the CRR benchmark,
// the StopContainer timeout of the floor arm, so both arms give the container the same grace).
const graceSeconds = 10

func envStr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// percentile is the nearest-rank percentile of sorted (q in (0, 1]).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

type stats struct{ p50, p90, min, max time.Duration }

// env is what a benchmark talks to: the cluster named by $KUBECONFIG, the node's CRI, and a
// namespace of its own.
type env struct {
	client kubernetes.Interface
	kruise versioned.Interface
	rt     cri.Runtime
	ns     string
}

// connect builds the clients, connects to the CRI and creates a namespace named prefix-<random>,
// deleted when the test ends. makeTarget names the make target to run in the error when
// $KUBECONFIG is unset.
func connect(ctx context.Context, t *testing.T, prefix, makeTarget string) *env {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		t.Fatalf("KUBECONFIG is not set: run `make %s`", makeTarget)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	e := &env{}
	if e.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if e.kruise, err = versioned.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	rt, info, err := cri.Connect(ctx, criEndpoint, 5*time.Second)
	if err != nil {
		t.Fatalf("connecting to CRI at %s: %v", criEndpoint, err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	e.rt = rt
	t.Logf("runtime %s %s, %d iterations per arm, image %s", info.RuntimeName, info.RuntimeVersion, iterations, image)

	e.ns = prefix + "-" + rand.String(5)
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	// Pods cannot be created before the namespace's default service account exists.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.client.CoreV1().ServiceAccounts(e.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("default service account in %s: %v", e.ns, err)
	}
	return e
}

// objectClient is what updateRetrying needs of a typed client of T.
type objectClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// updateRetrying reads object name with client, changes it with mutate and writes it back, again
// on a conflict.
func updateRetrying[T any](ctx context.Context, t *testing.T, desc string, client objectClient[T], name string, mutate func(T)) {
	t.Helper()
	framework.WaitFor(ctx, t, time.Minute, desc, func(ctx context.Context) (bool, string, error) {
		cur, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		mutate(cur)
		_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, "conflict", nil
		}
		return err == nil, "updated", err
	})
}
