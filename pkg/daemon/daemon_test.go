package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
)

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func testOptions(endpoint string) *Options {
	o := NewOptions()
	o.NodeName = "node-a"
	o.RuntimeEndpoint = endpoint
	o.Addr = "127.0.0.1:0"
	o.RuntimeWait = 0
	o.CRIProbeInterval = 50 * time.Millisecond
	o.CRIProbeTimeout = 200 * time.Millisecond
	return o
}

type running struct {
	base string
	stop context.CancelFunc
	done chan error
}

// startDaemon runs the daemon in the background and returns its address.
func startDaemon(t *testing.T, o *Options, client *fake.Clientset) *running {
	t.Helper()
	return runInBackground(t, o, deps{client: clientset.New(client), clock: clock.RealClock{}})
}

// runInBackground runs the daemon with d until the test ends; it returns once
// the daemon listens.
func runInBackground(t *testing.T, o *Options, d deps) *running {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	addrCh := make(chan net.Addr, 1)
	d.listening = func(a net.Addr) { addrCh <- a }
	r := &running{stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(ctx, o, d) }()
	select {
	case a := <-addrCh:
		r.base = "http://" + a.String()
	case err := <-r.done:
		t.Fatalf("daemon exited before listening: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("daemon did not start listening")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	return r
}

func (r *running) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(r.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (r *running) eventually(t *testing.T, path string, wantCode int, msg string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		var code int
		code, body = r.get(t, path)
		return code == wantCode
	}, 10*time.Second, 20*time.Millisecond, "%s: last body:\n%s", msg, body)
	return body
}

func TestDaemonReadiness(t *testing.T) {
	dir := critest.ShortTempDir(t)
	sock := filepath.Join(dir, "containerd.sock")
	rt := critest.NewFakeRuntime()
	rt.SetVersion("containerd", "1.6.20", "v1")
	critest.Serve(t, sock, rt)

	client := fake.NewClientset(node("node-a"))
	d := startDaemon(t, testOptions("unix://"+sock), client)

	code, body := d.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	body = d.eventually(t, "/readyz?verbose", http.StatusOK, "ready once CRI answers and the node is cached")
	assert.Contains(t, body, "[+]cri ok (runtime=containerd version=1.6.20 criVersion=v1 endpoint="+sock+")")
	assert.Contains(t, body, "[+]node ok")

	_, metrics := d.get(t, "/metrics")
	assert.Contains(t, metrics, "kruise_daemon_cri_up 1")
	assert.Contains(t, metrics, `kruise_daemon_runtime_info{runtime="containerd",version="1.6.20"} 1`)

	// The runtime stops answering: not ready, cri_up 0, still alive.
	rt.SetError(status.Error(codes.Unavailable, "containerd is restarting"))
	body = d.eventually(t, "/readyz", http.StatusServiceUnavailable, "not ready when CRI stops answering")
	assert.Contains(t, body, "[-]cri failed: container runtime at "+sock+" does not answer")
	_, metrics = d.get(t, "/metrics")
	assert.Contains(t, metrics, "kruise_daemon_cri_up 0")
	code, _ = d.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code, "liveness must not depend on the runtime")

	// It comes back, upgraded.
	rt.SetVersion("containerd", "1.7.0", "v1")
	rt.SetError(nil)
	d.eventually(t, "/readyz", http.StatusOK, "ready again when CRI answers")
	_, metrics = d.get(t, "/metrics")
	assert.Contains(t, metrics, `kruise_daemon_runtime_info{runtime="containerd",version="1.7.0"} 1`)
	assert.NotContains(t, metrics, `version="1.6.20"`)

	// A hung runtime is as bad as a dead one.
	rt.Hang(true)
	d.eventually(t, "/readyz", http.StatusServiceUnavailable, "not ready when CRI hangs")
	rt.Hang(false)
	d.eventually(t, "/readyz", http.StatusOK, "ready after hang")

	// Clean shutdown.
	d.stop()
	select {
	case err := <-d.done:
		require.NoError(t, err)
		d.done <- nil // for Cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not stop after cancel")
	}
}

func TestDaemonWatchesOnlyItsNode(t *testing.T) {
	dir := critest.ShortTempDir(t)
	sock := filepath.Join(dir, "crio.sock")
	critest.Serve(t, sock, critest.NewFakeRuntime())

	client := fake.NewClientset()
	d := startDaemon(t, testOptions(sock), client)

	var body string
	require.Eventually(t, func() bool {
		_, body = d.get(t, "/readyz")
		return strings.Contains(body, `[-]node failed: node "node-a" does not exist`)
	}, 10*time.Second, 20*time.Millisecond, "node missing: %s", body)

	_, err := client.CoreV1().Nodes().Create(context.Background(), node("node-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	d.eventually(t, "/readyz", http.StatusOK, "ready once the node exists")

	// Every list and watch on nodes is scoped to this node by name.
	var sawList, sawWatch bool
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "nodes" {
			continue
		}
		switch act := a.(type) {
		case k8stesting.ListAction:
			sawList = true
			assert.Equal(t, "metadata.name=node-a", act.GetListRestrictions().Fields.String())
		case k8stesting.WatchAction:
			sawWatch = true
			assert.Equal(t, "metadata.name=node-a", act.GetWatchRestrictions().Fields.String())
		}
	}
	assert.True(t, sawList && sawWatch, "expected a list and a watch on nodes: %v", client.Actions())

	require.NoError(t, client.CoreV1().Nodes().Delete(context.Background(), "node-a", metav1.DeleteOptions{}))
	d.eventually(t, "/readyz", http.StatusServiceUnavailable, "not ready once the node is gone")
}

func TestDaemonFailsWhenNoRuntime(t *testing.T) {
	dir := critest.ShortTempDir(t)
	o := testOptions("")
	o.HostRunDir = dir
	_, ctx := ktesting.NewTestContext(t)
	err := run(ctx, o, deps{client: clientset.New(fake.NewClientset(node("node-a"))), clock: clock.RealClock{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connecting to the container runtime")
	assert.Contains(t, err.Error(), "no CRI runtime found under "+dir)
	assert.Contains(t, err.Error(), filepath.Join(dir, "containerd/containerd.sock"))
}

func TestDaemonWaitsForRuntime(t *testing.T) {
	dir := critest.ShortTempDir(t)
	o := testOptions("")
	o.HostRunDir = dir
	o.RuntimeWait = 30 * time.Second
	d := startDaemon(t, o, fake.NewClientset(node("node-a")))

	body := d.eventually(t, "/readyz", http.StatusServiceUnavailable, "not ready before the runtime exists")
	assert.Contains(t, body, "not connected to a container runtime yet")
	code, _ := d.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code, "alive while waiting")

	critest.Serve(t, filepath.Join(dir, "containerd", "containerd.sock"), critest.NewFakeRuntime())
	d.eventually(t, "/readyz", http.StatusOK, "ready once the runtime appears")
}

func TestValidate(t *testing.T) {
	t.Setenv(NodeNameEnv, "")
	o := NewOptions()
	err := o.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node name is empty: set $NODE_NAME")

	t.Setenv(NodeNameEnv, "from-env")
	o = NewOptions()
	require.NoError(t, o.Validate())
	assert.Equal(t, "from-env", o.NodeName)

	o.RuntimeEndpoint = "tcp://1.2.3.4:5"
	o.CRIProbeInterval = 0
	err = o.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--runtime-endpoint")
	assert.Contains(t, err.Error(), "--cri-probe-interval")
}

func TestRunWithoutClusterConfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	o := NewOptions()
	o.NodeName = "node-a"
	err := Run(klog.NewContext(context.Background(), klog.Background()), o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "neither --kubeconfig nor $KUBECONFIG is set")

	o.NodeName = ""
	err = Run(context.Background(), o)
	require.Error(t, err)
	assert.True(t, errors.Unwrap(err) != nil)
	assert.Contains(t, err.Error(), "node name is empty")
}
