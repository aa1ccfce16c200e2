// Package framework holds the helpers every e2e test uses: clients for the cluster in KUBECONFIG,
// throwaway namespaces, object builders and condition waits with deadlines (never fixed sleeps).
//
// One file per topic:
//
//	framework.go    clients (typed, kruise, dynamic), namespaces, the test's context
//	wait.go         WaitFor, Poll, Consistently: every wait goes through them
//	pods.go         busybox pods, pod waits, pod descriptions
//	containers.go   the CRI connection, killing a container, container status helpers
//	jobs.go         Jobs: builders, completion and failure waits
//	events.go       Events of pods and other objects, waiting for one
//	logs.go         pod logs, following a container's log, parsing klog lines
//	nodes.go        the real node's name, fake and virtual-kubelet Node objects
//	simnodes.go     simulated nodes (kwok) labelled as zones and pools, their toleration, where pods landed
//	crr.go          waiting for a ContainerRecreateRequest
//	sidecar.go      the sidecar terminator's contract, sidecar Jobs and pods
//	imagepull.go    the image pull contract, ImagePullJob builders and waits
//	nodeimage.go    NodeImage tags: statuses, a watch of one tag, writing a status as a daemon would
//	pullrecords.go  what the recording CRI proxy and the credential plugin saw
//	registry.go     the loopback registry: credentials, pushing images, its request log
//	emptyimage.go   an image that runs nothing whatever its arguments (a HotUpgrade sidecar's idle copy)
//	daemon.go       kruise-daemon's pods and its /readyz
//	restarts.go     restart counts of kruise's own containers
//	tokens.go       service account tokens and clients acting with them
//	cluster.go      stopping and starting the local cluster's components (hack/cluster.sh)
//	runtimehang.go  making the CRI proxy hold the daemon's runtime calls
//	webhook.go      kruise-controller's pods and its /readyz, where the webhooks' checks are
//	controller.go   kruise-controller's rollout, the certificate its webhook serves, a pod it mutates
//	controllergates.go  kruise-controller's --feature-gates: one gate set for a test, the args put back
//	helm.go         running helm against the release make e2e-helm installs, the chart's directory
//	kubectl.go      running the kubectl binary
//	serverversion.go  the API server's minor version and whether it resizes pods (pods/resize)
//	kubectlkruise.go  building the kubectl-kruise plugin once and running it
//	volumes.go      the local cluster's default StorageClass (localpv), where its volumes live, PVC waits
//	metrics.go      the daemon's /metrics, the controller's socket, sample names and series in an exposition
//	controllermetrics.go  the controller's /metrics, on its unix socket, and its resident memory
package framework

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// KruiseNamespace is where deploy/ installs kruise.
const KruiseNamespace = "kruise-system"

// Framework gives a test clients for the cluster under test.
type Framework struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Registry is the loopback registry's host:port (env KRUISE_E2E_REGISTRY).
	Registry string
}

// New connects to the cluster named by KUBECONFIG and fails the test when it cannot.
func New(t testing.TB) *Framework {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		t.Fatal("KUBECONFIG is not set: run the e2e tests with `make e2e`, which brings the local cluster up")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("loading kubeconfig %s: %v", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	reg := os.Getenv("KRUISE_E2E_REGISTRY")
	if reg == "" {
		reg = "127.0.0.1:5000"
	}
	return &Framework{Config: cfg, Client: client, Registry: reg}
}

// Image returns a reference to an image in the loopback registry, e.g. Image("public/busybox:1.35").
func (f *Framework) Image(repoAndTag string) string {
	return f.Registry + "/" + repoAndTag
}

// Context returns a context that ends with the test or after timeout, whichever comes first.
func Context(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// NewNamespace creates a namespace with a unique name, waits until pods can be created in it
// (default service account and root CA published), and deletes it when the test ends.
func (f *Framework) NewNamespace(ctx context.Context, t testing.TB, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("e2e-%s-%s", strings.ToLower(prefix), rand.String(5))
	_, err := f.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kruise.e2e/test": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := f.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting namespace %s: %v", name, err)
		}
	})
	WaitFor(ctx, t, time.Minute, "default service account in "+name, func(ctx context.Context) (bool, string, error) {
		_, err := f.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no default service account yet", nil
		}
		if err != nil {
			return false, "", err
		}
		_, err = f.Client.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no kube-root-ca.crt yet", nil
		}
		return err == nil, "ready", err
	})
	return name
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// KruiseClient returns a typed client for the apps.kruise.io kinds.
func (f *Framework) KruiseClient(t testing.TB) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(f.Config)
	if err != nil {
		t.Fatalf("creating kruise client: %v", err)
	}
	return c
}

// Dynamic returns a dynamic client, for objects a typed client cannot express (a string where
// the schema wants a boolean, a number too large for an int32 field).
func (f *Framework) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(f.Config)
	if err != nil {
		t.Fatalf("creating dynamic client: %v", err)
	}
	return c
}
