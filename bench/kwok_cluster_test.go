//go:build bench

package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/netns"
	"github.com/nodekruise/kruise/test/proc"
)

// A private control plane for the CloneSet scale benchmark: etcd, kube-apiserver and
// kube-scheduler of the local cluster's versions on free loopback ports, and kwok simulating the
// nodes' kubelets, so that thousands of pods load neither the shared local cluster nor a real
// kubelet. No kube-controller-manager: nothing here needs one (the benchmark deletes nothing but
// the whole cluster, and without a node-lifecycle controller the simulated nodes stay Ready).

const (
	k8sVersion  = "v1.34.10"
	etcdVersion = "v3.6.4"
	kwokVersion = "v0.8.0"
	// kwokNodeLabel marks the Nodes kwok manages (--manage-nodes-with-label-selector).
	kwokNodeLabel = "bench.kruise.io/kwok"
	// startTimeout bounds how long a component may take to come up.
	startTimeout = 2 * time.Minute
)

// Users of the private API server, each with a static bearer token: all in system:masters. The
// controller's is the name the audit filter of leaderProbe.measure looks for; OpenKruise's
// kruise-manager, run beside it by some benchmarks, has a name of its own.
var kwokClusterUsers = []string{"admin", "kube-scheduler", "kwok", controllerUser, openKruiseUser}

// openKruiseUser is OpenKruise's kruise-manager on the private API server (audited as the
// controller is).
const openKruiseUser = "openkruise-manager"

// kwokCluster is a running private control plane.
type kwokCluster struct {
	dir    string
	host   string
	admin  *rest.Config
	kube   kubernetes.Interface
	kruise versioned.Interface
	// kubeconfigs by user, for the host processes.
	kubeconfigs map[string]string
	// auditLog holds the controller's requests (Metadata level), nothing else.
	auditLog  string
	apiserver *exec.Cmd
}

func kruiseCache() string {
	if d := os.Getenv("KRUISE_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kruise")
}

// cachedBinary returns the executable at path, failing the test with how to get it when there
// is none.
func cachedBinary(t *testing.T, path, how string) string {
	t.Helper()
	if st, err := os.Stat(path); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s not found: %s", path, how)
	}
	return path
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	port, err := netns.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startKWOKCluster starts etcd, kube-apiserver, kube-scheduler and kwok (with the stages of
// stagesFile) in dir, installs kruise's CRDs, and returns once the API server serves them. All
// is stopped when the test ends.
func startKWOKCluster(t *testing.T, dir, stagesFile string) *kwokCluster {
	t.Helper()
	k8sBin := filepath.Join(kruiseCache(), "k8s", k8sVersion, "bin")
	how := "run `make deps` (hack/build-k8s.sh)"
	etcd := cachedBinary(t, filepath.Join(kruiseCache(), "etcd", etcdVersion, "bin", "etcd"), how)
	apiserver := cachedBinary(t, filepath.Join(k8sBin, "kube-apiserver"), how)
	scheduler := cachedBinary(t, filepath.Join(k8sBin, "kube-scheduler"), how)
	kwok := envStr("KRUISE_KWOK", filepath.Join(kruiseCache(), "kwok", kwokVersion, "bin", "kwok"))
	cachedBinary(t, kwok, "run hack/kwok.sh")

	c := &kwokCluster{dir: dir, kubeconfigs: map[string]string{}, auditLog: filepath.Join(dir, "audit.log")}
	etcdURL := startKWOKEtcd(t, etcd, dir)
	c.startAPIServer(t, apiserver, etcdURL)
	c.installCRDs(t, filepath.Join("..", "deploy", "base", "crds"))

	schedConfig := filepath.Join(dir, "scheduler.yaml")
	// The default client rate (50/s) would make binding, not kruise, the pace of pod creation.
	writeFile(t, schedConfig, fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`, c.kubeconfigs["kube-scheduler"]))
	proc.Start(t, filepath.Join(dir, "kube-scheduler.log"), scheduler,
		"--config="+schedConfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(freeLoopbackPort(t)),
		"--v=1",
	)
	proc.Start(t, filepath.Join(dir, "kwok.log"), kwok,
		"--kubeconfig="+c.kubeconfigs["kwok"],
		"--config="+stagesFile,
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector="+kwokNodeLabel,
		"--cidr=10.0.0.1/16",
		"--node-ip=10.255.0.1",
	)
	return c
}

// runDir is the directory a scale benchmark keeps its logs in: $env if set (kept), else a new
// temporary one, removed when the test passes and kept (and named) when it fails.
func runDir(t *testing.T, env, prefix string) string {
	t.Helper()
	if dir := os.Getenv(env); dir != "" {
		return dir
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func startKWOKEtcd(t *testing.T, bin, dir string) string {
	t.Helper()
	client := fmt.Sprintf("http://127.0.0.1:%d", freeLoopbackPort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freeLoopbackPort(t))
	proc.Start(t, filepath.Join(dir, "etcd.log"), bin,
		"--name=bench",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=bench="+peer,
		"--listen-metrics-urls=http://127.0.0.1:"+strconv.Itoa(freeLoopbackPort(t)),
		"--unsafe-no-fsync",
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	)
	pollStart(t, "etcd health", func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return client
}

// startAPIServer starts kube-apiserver with static tokens (one per user), a self-signed serving
// certificate and an audit log of the controller's requests, and writes a kubeconfig per user.
func (c *kwokCluster) startAPIServer(t *testing.T, bin, etcdURL string) {
	t.Helper()
	saKey := filepath.Join(c.dir, "sa.key")
	writeFile(t, saKey, string(newECKeyPEM(t)))
	var tokens strings.Builder
	tokenOf := map[string]string{}
	for i, user := range kwokClusterUsers {
		tokenOf[user] = fmt.Sprintf("bench-token-%d-%d", i, time.Now().UnixNano())
		fmt.Fprintf(&tokens, "%s,%s,%d,\"system:masters\"\n", tokenOf[user], user, i+1)
	}
	tokenFile := filepath.Join(c.dir, "tokens.csv")
	writeFile(t, tokenFile, tokens.String())
	policy := filepath.Join(c.dir, "audit-policy.yaml")
	writeFile(t, policy, fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [%q, %q]
- level: None
`, controllerUser, openKruiseUser))

	port := freeLoopbackPort(t)
	c.host = fmt.Sprintf("https://127.0.0.1:%d", port)
	c.apiserver = proc.Start(t, filepath.Join(c.dir, "kube-apiserver.log"), bin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.dir, "certs"),
		"--token-auth-file="+tokenFile,
		"--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=RBAC",
		// Pods need no service account token (nothing runs in them), and no
		// kube-controller-manager would remove the not-ready taint put on new Nodes.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--audit-policy-file="+policy,
		"--audit-log-path="+c.auditLog,
		"--audit-log-format=json",
		"--v=1",
	)
	for _, user := range kwokClusterUsers {
		c.kubeconfigs[user] = c.writeKubeconfig(t, user, tokenOf[user])
	}
	c.admin = &rest.Config{Host: c.host, BearerToken: tokenOf["admin"], TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS: 300, Burst: 600}
	var err error
	if c.kube, err = kubernetes.NewForConfig(c.admin); err != nil {
		t.Fatal(err)
	}
	if c.kruise, err = versioned.NewForConfig(c.admin); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(hc.CloseIdleConnections)
	pollStart(t, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+tokenOf["admin"])
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// writeKubeconfig writes a kubeconfig for user to the cluster (the serving certificate is
// self-signed: loopback only, not verified).
func (c *kwokCluster) writeKubeconfig(t *testing.T, user, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: c.host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: user}
	cfg.CurrentContext = "bench"
	path := filepath.Join(c.dir, "kubeconfig-"+strings.NewReplacer(":", "-").Replace(user))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func newECKeyPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// installCRDs creates every CRD in dir and waits until CloneSets are served.
func (c *kwokCluster) installCRDs(t *testing.T, dir string) {
	t.Helper()
	apiext, err := apiextensionsclient.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "apps.kruise.io_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	ctx := context.Background()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("installing %s: %v", f, err)
		}
	}
	pollStart(t, "CloneSets served", func(ctx context.Context) (bool, error) {
		_, err := c.kruise.AppsV1beta1().CloneSets("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

// createNodes creates n Nodes for kwok to manage and waits until all are Ready.
func (c *kwokCluster) createNodes(t *testing.T, n int) {
	t.Helper()
	c.createNodesLabelled(t, n, nil)
}

// createNodesLabelled is createNodes with the further labels of node i from labels (nil: none).
func (c *kwokCluster) createNodesLabelled(t *testing.T, n int, labels func(i int) map[string]string) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("kwok-node-%04d", i),
			Labels: map[string]string{kwokNodeLabel: "true", corev1.LabelHostname: fmt.Sprintf("kwok-node-%04d", i)},
		}}
		if labels != nil {
			for k, v := range labels(i) {
				node.Labels[k] = v
			}
		}
		if _, err := c.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", node.Name, err)
		}
	}
	pollStart(t, fmt.Sprintf("%d kwok nodes Ready", n), func(ctx context.Context) (bool, error) {
		list, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwokNodeLabel})
		if err != nil {
			return false, nil
		}
		ready := 0
		for i := range list.Items {
			for _, cond := range list.Items[i].Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
}

// pollStart polls cond every 200ms until it holds or startTimeout passes.
func pollStart(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, cond); err != nil {
		t.Fatalf("timed out waiting for %s: %v", what, err)
	}
}
