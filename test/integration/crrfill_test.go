package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/crrfill"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const crrFillNS = "crr-fill"

// TestCRRFilledInAtCreate installs mcontainerrecreaterequest.kb.io and the CRR validating webhook
// as deploy/base renders them (the client configs pointing at webhooks this test serves on
// loopback), and the policy kruise-crr-read-only-fields of deploy/base, into a real API server:
// the response to a user's create of a CRR for a running pod carries the routing labels, each
// container's statusContext and failurePolicy Fail, in either version, as OpenKruise's does;
// the policy lets the webhook's values through; a creator's statusContext is refused; and
// kruise-controller's own requests are not sent.
func TestCRRFilledInAtCreate(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	cx := context.Background()
	_, err = kube.CoreV1().Namespaces().Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crrFillNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, sctx := ktesting.NewTestContext(t)
	addr, ca := serveWebhooks(t, sctx, crrfill.Webhook(kube.CoreV1()), validate.CRRWebhook(kube.CoreV1()))
	installCRRMutatingWebhook(t, kube, addr, ca)
	installValidatingWebhooks(t, kube, addr, ca)
	installPolicy(t, kube, "../../deploy/base/crr-policy.yaml")
	grantKruiseKinds(t, kube, tenantUser, controllerUser)
	tenant, controller := as(t, c.config, tenantUser), as(t, c.config, controllerUser)

	// A running pod, as the kubelet reports it.
	pod, err := kube.CoreV1().Pods(crrFillNS).Create(cx, gen.Pod("web", gen.SetPodNamespace(crrFillNS), gen.SetPodNodeName("node-a"),
		gen.SetPodContainers(corev1.Container{Name: "main", Image: "busybox"}, corev1.Container{Name: "sidecar", Image: "busybox"})), metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "main", ContainerID: "containerd://aaa", RestartCount: 3, Image: "busybox", ImageID: "busybox"},
		{Name: "sidecar", ContainerID: "containerd://bbb", Image: "busybox", ImageID: "busybox"},
	}}
	pod, err = kube.CoreV1().Pods(crrFillNS).UpdateStatus(cx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	newCRR := func(name string) *v1alpha1.ContainerRecreateRequest {
		return gen.CRR(name, gen.SetCRRNamespace(crrFillNS), gen.SetCRRPodName("web"), gen.SetCRRContainers("main", "sidecar"))
	}
	crrs := tenant.AppsV1alpha1().ContainerRecreateRequests(crrFillNS)
	// The configuration takes effect once the API server's informer has it.
	waitFor(t, "the webhook to fill a CRR in", func(ctx context.Context) (bool, error) {
		got, err := crrs.Create(ctx, newCRR("probe"), metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		require.NoError(t, crrs.Delete(ctx, "probe", metav1.DeleteOptions{}))
		return got.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey] != "", nil
	})

	wantLabels := map[string]string{
		v1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
		v1alpha1.ContainerRecreateRequestNodeNameKey: "node-a",
		v1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}
	t.Run("the create response carries them", func(t *testing.T) {
		got, err := crrs.Create(ctx(t), newCRR("restart"), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, wantLabels, got.Labels)
		require.Len(t, got.Spec.Containers, 2)
		assert.Equal(t, &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://aaa", RestartCount: 3}, got.Spec.Containers[0].StatusContext)
		assert.Equal(t, &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://bbb"}, got.Spec.Containers[1].StatusContext)
		require.NotNil(t, got.Spec.Strategy)
		assert.Equal(t, v1alpha1.ContainerRecreateRequestFailurePolicyFail, got.Spec.Strategy.FailurePolicy)
		assert.True(t, v1alpha1.IsRouted(got))
		assert.False(t, v1alpha1.IsAdmitted(got), "admission stays kruise-controller's")
	})
	t.Run("through v1beta1 as well", func(t *testing.T) {
		got, err := tenant.AppsV1beta1().ContainerRecreateRequests(crrFillNS).Create(ctx(t), &v1beta1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "beta", Namespace: crrFillNS},
			Spec:       v1beta1.ContainerRecreateRequestSpec{PodName: "web", Containers: []v1beta1.ContainerRecreateRequestContainer{{Name: "sidecar"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, wantLabels, got.Labels)
		assert.Equal(t, &v1beta1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://bbb"}, got.Spec.Containers[0].StatusContext)
		require.NotNil(t, got.Spec.Strategy)
		assert.Equal(t, v1beta1.ContainerRecreateRequestFailurePolicyFail, got.Spec.Strategy.FailurePolicy)
	})
	t.Run("a creator's statusContext is refused", func(t *testing.T) {
		crr := newCRR("forged")
		crr.Spec.Containers[0].StatusContext = &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old"}
		_, err := crrs.Create(ctx(t), crr, metav1.CreateOptions{})
		require.Error(t, err)
		require.True(t, apierrors.IsInvalid(err), "%v", err)
		require.Contains(t, err.Error(), `admission webhook "mcontainerrecreaterequest.kb.io" denied the request`)
		require.Contains(t, err.Error(), "spec.containers[0].statusContext: Forbidden")
	})
	t.Run("a missing pod is still refused by the validating webhook", func(t *testing.T) {
		crr := newCRR("missing")
		crr.Spec.PodName = "nope"
		_, err := crrs.Create(ctx(t), crr, metav1.CreateOptions{})
		require.Error(t, err)
		require.Contains(t, err.Error(), "vcontainerrecreaterequest.kb.io")
	})
	t.Run("kruise-controller's own requests are not sent", func(t *testing.T) {
		got, err := controller.AppsV1alpha1().ContainerRecreateRequests(crrFillNS).Create(ctx(t), newCRR("own"), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Empty(t, got.Labels)
		assert.Nil(t, got.Spec.Containers[0].StatusContext)
	})
}

// installCRRMutatingWebhook creates a MutatingWebhookConfiguration holding only the CRR entry of
// deploy/base/webhook.yaml, calling the server at addr.
func installCRRMutatingWebhook(t *testing.T, kube kubernetes.Interface, addr string, ca []byte) {
	t.Helper()
	w := baseMutatingWebhook(t, "mcontainerrecreaterequest.kb.io", addr, ca)
	require.True(t, strings.HasSuffix(*w.ClientConfig.URL, crrfill.Path))
	installMutatingWebhook(t, kube, "crr-fill", w)
}

// baseMutatingWebhook is the entry name of deploy/base/webhook.yaml's MutatingWebhookConfiguration,
// its client config pointing at the server at addr.
func baseMutatingWebhook(t *testing.T, name, addr string, ca []byte) admissionregistrationv1.MutatingWebhook {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/base/webhook.yaml")
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		err := dec.Decode(&cfg)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if cfg.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		for _, w := range cfg.Webhooks {
			if w.Name == name {
				url := "https://" + addr + *w.ClientConfig.Service.Path
				w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
				return w
			}
		}
	}
	t.Fatalf("no %s in deploy/base/webhook.yaml", name)
	return admissionregistrationv1.MutatingWebhook{}
}

// installMutatingWebhook creates a MutatingWebhookConfiguration named name holding w alone.
func installMutatingWebhook(t *testing.T, kube kubernetes.Interface, name string, w admissionregistrationv1.MutatingWebhook) {
	t.Helper()
	_, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.MutatingWebhook{w},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}
