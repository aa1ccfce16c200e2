// Package integration runs the apps.kruise.io CRDs in a real kube-apiserver
// backed by a real etcd, both started by the test on loopback ports.
//
// The binaries are looked up in the version-keyed cache that hack/build-k8s.sh
// fills ($KRUISE_CACHE, default ~/.cache/kruise). When they are missing, the
// tests are skipped with a message saying so.
//
// Every test starts its own etcd and kube-apiserver and runs in parallel with the others: most
// of a start is waiting (the API server's post-start hooks, CRDs established), not CPU.
package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/proc"
)

const (
	k8sVersion  = "v1.34.10"
	etcdVersion = "v3.6.4"
	// startTimeout bounds how long etcd or the API server may take to come up.
	startTimeout = 90 * time.Second
)

// apiserverVersion is the kube-apiserver release the tests start: $KRUISE_K8S_VERSION (built by
// `K8S_VERSION=<it> hack/build-k8s.sh`), to check the CRDs' schemas and CEL rules on an older
// release, else k8sVersion.
func apiserverVersion() string {
	if v := os.Getenv("KRUISE_K8S_VERSION"); v != "" {
		return v
	}
	return k8sVersion
}

// cluster is a running etcd + kube-apiserver with the CRDs installed.
type cluster struct {
	config  *rest.Config
	etcdURL string
	kruise  kruiseclient.Interface
	apiext  apiextensionsclient.Interface
}

func cacheDir() string {
	if d := os.Getenv("KRUISE_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kruise")
}

func binaries(t *testing.T) (etcd, apiserver string) {
	t.Helper()
	etcd = filepath.Join(cacheDir(), "etcd", etcdVersion, "bin", "etcd")
	apiserver = filepath.Join(cacheDir(), "k8s", apiserverVersion(), "bin", "kube-apiserver")
	for _, b := range []string{etcd, apiserver} {
		if st, err := os.Stat(b); err != nil || st.Mode()&0o111 == 0 {
			t.Skipf("integration test skipped: %s not found; build it with hack/build-k8s.sh", b)
		}
	}
	return etcd, apiserver
}

// startCluster starts etcd and kube-apiserver in a temporary directory and
// installs the CRDs from deploy/base/crds. Everything is stopped in t.Cleanup.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	return startClusterWith(t, nil)
}

// startClusterWith is startCluster with each CRD passed through edit (when
// not nil) before it is installed.
func startClusterWith(t *testing.T, edit func(*apiextensionsv1.CustomResourceDefinition)) *cluster {
	t.Helper()
	etcdBin, apiserverBin := binaries(t)
	dir := t.TempDir()

	etcdURL := startEtcd(t, etcdBin, filepath.Join(dir, "etcd"))
	cfg := startAPIServer(t, apiserverBin, filepath.Join(dir, "apiserver"), etcdURL)

	c := &cluster{config: cfg, etcdURL: etcdURL}
	var err error
	c.kruise, err = kruiseclient.NewForConfig(cfg)
	require.NoError(t, err)
	c.apiext, err = apiextensionsclient.NewForConfig(cfg)
	require.NoError(t, err)
	c.installCRDs(t, "../../deploy/base/crds", edit)
	return c
}

// portsGiven are the ports freePort returned: the tests run in parallel, each starting its own
// etcd and kube-apiserver, and a port closed by one must not be handed to another before its
// process binds it.
var portsGiven = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

func freePort(t *testing.T) int {
	t.Helper()
	portsGiven.Lock()
	defer portsGiven.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsGiven.m[port] {
			portsGiven.m[port] = true
			return port
		}
	}
}

// startProcess starts a host process for the test (proc.Start).
func startProcess(t *testing.T, logFile, bin string, args ...string) *exec.Cmd {
	t.Helper()
	return proc.Start(t, logFile, bin, args...)
}

func startEtcd(t *testing.T, bin, dir string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	startProcess(t, filepath.Join(dir, "etcd.log"), bin,
		"--name=test",
		"--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=test="+peer,
		"--listen-metrics-urls=http://127.0.0.1:"+strconv.Itoa(freePort(t)),
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	waitFor(t, "etcd health", func(ctx context.Context) (bool, error) {
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

// pki is the minimal set of keys the API server needs: a CA, a serving
// certificate for 127.0.0.1, an admin client certificate (system:masters) and
// a service-account signing key.
type pki struct {
	caFile, servingCert, servingKey, saKey, saPub string
	caPEM, clientCert, clientKey                  []byte
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kruise-integration-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	issue := func(serial int64, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	}

	p := &pki{
		caFile:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "serving.crt"),
		servingKey:  filepath.Join(dir, "serving.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
		caPEM:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}
	servingCert, servingKey := issue(2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:    []string{"localhost"},
	})
	p.clientCert, p.clientKey = issue(3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kruise-integration-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	require.NoError(t, err)
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	require.NoError(t, err)

	for file, data := range map[string][]byte{
		p.caFile:      p.caPEM,
		p.servingCert: servingCert,
		p.servingKey:  servingKey,
		p.saKey:       pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saKeyDER}),
		p.saPub:       pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
	} {
		require.NoError(t, os.WriteFile(file, data, 0o600))
	}
	return p
}

func startAPIServer(t *testing.T, bin, dir, etcdURL string) *rest.Config {
	t.Helper()
	p := newPKI(t, filepath.Join(dir, "pki"))
	port := freePort(t)
	startProcess(t, filepath.Join(dir, "kube-apiserver.log"), bin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--tls-cert-file="+p.servingCert,
		"--tls-private-key-file="+p.servingKey,
		"--client-ca-file="+p.caFile,
		"--service-account-key-file="+p.saPub,
		"--service-account-signing-key-file="+p.saKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=RBAC",
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins=ServiceAccount",
		"--v=1",
	)
	cfg := &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", port),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: p.clientCert,
			KeyData:  p.clientKey,
		},
		QPS:   100,
		Burst: 200,
	}

	tlsCfg, err := rest.TLSConfigFor(cfg)
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 5 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	waitFor(t, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return cfg
}

// installCRDs creates every CRD in dir, passed through edit when not nil, and
// waits until each is Established.
func (c *cluster) installCRDs(t *testing.T, dir string, edit func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	ctx := context.Background()
	var names []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(raw, crd), f)
		if edit != nil {
			edit(crd)
		}
		_, err = c.apiext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		require.NoError(t, err, "installing %s", f)
		names = append(names, crd.Name)
	}
	require.NotEmpty(t, names, "no CRDs found in %s", dir)
	for _, name := range names {
		waitFor(t, "CRD "+name+" established", func(ctx context.Context) (bool, error) {
			crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	}
	// Established does not mean the REST handlers serve yet: poll a list.
	waitFor(t, "apps.kruise.io resources served", func(ctx context.Context) (bool, error) {
		_, err1 := c.kruise.AppsV1alpha1().ContainerRecreateRequests("default").List(ctx, metav1.ListOptions{})
		_, err2 := c.kruise.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{})
		_, err3 := c.kruise.AppsV1beta1().ImagePullJobs("default").List(ctx, metav1.ListOptions{})
		_, err4 := c.kruise.AppsV1alpha1().ImageListPullJobs("default").List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil && err3 == nil && err4 == nil, nil
	})
}

// waitFor polls cond every 100ms until it returns true or startTimeout passes.
func waitFor(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond)
	require.NoError(t, err, "timed out waiting for %s", what)
}

// requireInvalid asserts that err is a 422 Invalid whose message contains want.
func requireInvalid(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err, "expected the API server to reject the object (%s)", want)
	require.True(t, apierrors.IsInvalid(err), "expected Invalid, got %v", err)
	require.Contains(t, err.Error(), want)
}
