package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const webhookNS = "validating"

// TestValidatingWebhooksInAnAPIServer installs kruise-validating-webhook-configuration as
// deploy/base renders it (only the client config points at a webhook server this
// test runs on loopback) into a real API server, and checks what users see: a CRR for a missing,
// terminating or finished pod or an unknown container, and a job with an unparsable image, are
// refused at create with the API server's "admission webhook ... denied the request", 422 Invalid;
// v1alpha1 requests are sent too (matchPolicy Equivalent); kruise-controller's own CRRs and
// ImagePullJobs are not sent (matchConditions).
func TestValidatingWebhooksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	cx := context.Background()
	_, err = kube.CoreV1().Namespaces().Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: webhookNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	addr, ca := serveValidatingWebhooks(t, kube, c.kruise)
	installValidatingWebhooks(t, kube, addr, ca)
	grantKruiseKinds(t, kube, tenantUser, controllerUser)
	tenant, controller := as(t, c.config, tenantUser), as(t, c.config, controllerUser)

	pods := kube.CoreV1().Pods(webhookNS)
	newPod := func(name string) *corev1.Pod {
		return gen.Pod(name, gen.SetPodNamespace(webhookNS), gen.SetPodContainers(corev1.Container{Name: "main", Image: "busybox"}))
	}
	_, err = pods.Create(cx, newPod("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	ending := newPod("ending")
	ending.Finalizers = []string{"kruise.io/test-hold"}
	_, err = pods.Create(cx, ending, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, pods.Delete(cx, "ending", metav1.DeleteOptions{}))
	t.Cleanup(func() {
		_, _ = pods.Patch(context.Background(), "ending", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	crr := func(name, pod string, containers ...string) *v1alpha1.ContainerRecreateRequest {
		return gen.CRR(name, gen.SetCRRNamespace(webhookNS), gen.SetCRRPodName(pod), gen.SetCRRContainers(containers...))
	}
	// The configuration takes effect once the API server's informer has it.
	waitFor(t, "the webhook to refuse a CRR for a missing pod", func(ctx context.Context) (bool, error) {
		_, err := tenant.AppsV1alpha1().ContainerRecreateRequests(webhookNS).Create(ctx, crr("probe", "nope", "main"), metav1.CreateOptions{})
		if err == nil {
			require.NoError(t, tenant.AppsV1alpha1().ContainerRecreateRequests(webhookNS).Delete(ctx, "probe", metav1.DeleteOptions{}))
			return false, nil
		}
		return strings.Contains(err.Error(), "vcontainerrecreaterequest.kb.io"), nil
	})

	refused := func(t *testing.T, err error, webhook string, want ...string) {
		t.Helper()
		require.Error(t, err)
		require.True(t, apierrors.IsInvalid(err), "reason %s: %v", apierrors.ReasonForError(err), err)
		for _, w := range append([]string{fmt.Sprintf("admission webhook %q denied the request", webhook)}, want...) {
			require.Contains(t, err.Error(), w)
		}
	}
	t.Run("CRRs", func(t *testing.T) {
		crrs := tenant.AppsV1alpha1().ContainerRecreateRequests(webhookNS)
		_, err := crrs.Create(ctx(t), crr("missing", "nope", "main"), metav1.CreateOptions{})
		refused(t, err, "vcontainerrecreaterequest.kb.io", `ContainerRecreateRequest.apps.kruise.io "missing" is invalid: `+
			`spec.podName: Invalid value: "nope": pod "nope" not found in namespace "`+webhookNS+`"`)
		_, err = crrs.Create(ctx(t), crr("unknown", "web", "main", "ghost"), metav1.CreateOptions{})
		refused(t, err, "vcontainerrecreaterequest.kb.io", `spec.containers[1].name: Invalid value: "ghost": container "ghost" not found in pod "web"`)
		_, err = crrs.Create(ctx(t), crr("terminating", "ending", "main"), metav1.CreateOptions{})
		refused(t, err, "vcontainerrecreaterequest.kb.io", `pod "ending" is being deleted`)
		_, err = tenant.AppsV1beta1().ContainerRecreateRequests(webhookNS).Create(ctx(t), &v1beta1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "beta", Namespace: webhookNS},
			Spec:       v1beta1.ContainerRecreateRequestSpec{PodName: "nope", Containers: []v1beta1.ContainerRecreateRequestContainer{{Name: "main"}}},
		}, metav1.CreateOptions{})
		refused(t, err, "vcontainerrecreaterequest.kb.io", `pod "nope" not found`)

		// A pod that exists (not scheduled: the request waits for it) is fine.
		_, err = crrs.Create(ctx(t), crr("good", "web", "main"), metav1.CreateOptions{})
		require.NoError(t, err)
		// kruise-controller's own requests are not sent: it answers them in status.
		_, err = controller.AppsV1alpha1().ContainerRecreateRequests(webhookNS).Create(ctx(t), crr("own", "nope", "main"), metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("ImagePullJobs", func(t *testing.T) {
		job := func(name, image string) *v1beta1.ImagePullJob {
			return gen.ImagePullJob(name, gen.SetImagePullJobNamespace(webhookNS), func(j *v1beta1.ImagePullJob) {
				j.Spec.Image, j.Spec.CompletionPolicy.Type = image, v1beta1.Always
			})
		}
		_, err := tenant.AppsV1beta1().ImagePullJobs(webhookNS).Create(ctx(t), job("bad", "Busybox"), metav1.CreateOptions{})
		refused(t, err, "vimagepulljob-v1beta1.kb.io", `ImagePullJob.apps.kruise.io "bad" is invalid: spec.image: Invalid value: "Busybox": invalid image reference "Busybox"`)
		_, err = tenant.AppsV1alpha1().ImagePullJobs(webhookNS).Create(ctx(t), &v1alpha1.ImagePullJob{
			ObjectMeta: metav1.ObjectMeta{Name: "alpha", Namespace: webhookNS},
			Spec: v1alpha1.ImagePullJobSpec{Image: "busy box", ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
				CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always},
			}},
		}, metav1.CreateOptions{})
		refused(t, err, "vimagepulljob-v1beta1.kb.io", `invalid image reference "busy box"`)
		_, err = tenant.AppsV1beta1().ImagePullJobs(webhookNS).Create(ctx(t), job("good", "registry.example/app:v1"), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = controller.AppsV1beta1().ImagePullJobs(webhookNS).Create(ctx(t), job("own", "Busybox"), metav1.CreateOptions{})
		require.NoError(t, err, "an ImageListPullJob's ImagePullJobs are not sent")
	})
	t.Run("ImageListPullJobs", func(t *testing.T) {
		list := func(name string, images ...string) *v1beta1.ImageListPullJob {
			return gen.ImageListPullJob(name, gen.SetImageListPullJobNamespace(webhookNS), gen.SetImageListPullJobImages(images...),
				func(j *v1beta1.ImageListPullJob) { j.Spec.CompletionPolicy.Type = v1beta1.Always })
		}
		_, err := tenant.AppsV1beta1().ImageListPullJobs(webhookNS).Create(ctx(t), list("bad", "busybox", "Not Valid"), metav1.CreateOptions{})
		refused(t, err, "vimagelistpulljob-v1beta1.kb.io", `spec.images[1]: Invalid value: "Not Valid": invalid image reference "Not Valid"`)
		_, err = tenant.AppsV1beta1().ImageListPullJobs(webhookNS).Create(ctx(t), list("good", "busybox", "registry.example/app:v1"), metav1.CreateOptions{})
		require.NoError(t, err)
	})
}

// serveValidatingWebhooks serves the validating webhooks on loopback over TLS, reading pods and
// ControllerRevisions with kube and SidecarSets with kruise, and returns the server's address and
// its CA.
func serveValidatingWebhooks(t *testing.T, kube kubernetes.Interface, kruise kruiseclient.Interface) (addr string, ca []byte) {
	t.Helper()
	_, sctx := ktesting.NewTestContext(t)
	return serveWebhooks(t, sctx, validate.CRRWebhook(kube.CoreV1()), validate.ImagePullJobWebhook(), validate.ImageListPullJobWebhook(),
		validate.CloneSetWebhook(validate.InPlaceRules{Resize: true}), validate.StatefulSetWebhook(validate.InPlaceRules{Resize: true}), validate.DaemonSetWebhook(),
		validate.SidecarSetWebhook(kruise.AppsV1beta1(), kube.AppsV1(), "kruise-system", nil, nil),
		validate.BroadcastJobWebhook(), validate.AdvancedCronJobWebhook())
}

// serveWebhooks serves whs on loopback over TLS, with a self-signed certificate, until the test
// ends, and returns the server's address and the certificate (its own CA).
func serveWebhooks(t *testing.T, ctx context.Context, whs ...server.Webhook) (addr string, ca []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	srv, err := server.New(server.Options{Addr: "127.0.0.1:0", GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }})
	require.NoError(t, err)
	for _, wh := range whs {
		require.NoError(t, srv.HandleAdmission(wh))
	}
	a, err := srv.Listen()
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("webhook server: %v", err)
		}
	})
	return a.String(), certPEM
}

// installValidatingWebhooks creates the ValidatingWebhookConfiguration of
// deploy/base/webhook.yaml with its webhooks calling the server at addr.
func installValidatingWebhooks(t *testing.T, kube kubernetes.Interface, addr string, ca []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/base/webhook.yaml")
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		err := dec.Decode(&cfg)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if cfg.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		// The PodUnavailableBudget, WorkloadSpread, EphemeralJob, PodProbeMarker, UnitedDeployment
		// and PersistentPodState entries have their own tests (pub_webhook_test.go,
		// spread_webhook_test.go, ephemeraljob_test.go, podprobemarker_webhook_test.go,
		// uniteddeployment_webhook_test.go, pps_webhook_test.go).
		cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
			return strings.HasPrefix(w.Name, "vpod") || strings.HasPrefix(w.Name, "vworkloadspread") || w.Name == "vephemeraljob.kb.io" ||
				w.Name == "vuniteddeployment.kb.io" || w.Name == "vpersistentpodstate.kb.io"
		})
		require.Len(t, cfg.Webhooks, 9)
		for i := range cfg.Webhooks {
			w := &cfg.Webhooks[i]
			url := "https://" + addr + *w.ClientConfig.Service.Path
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
		}
		_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
		require.NoError(t, err)
		return
	}
	t.Fatal("no ValidatingWebhookConfiguration in deploy/base/webhook.yaml")
}

// grantKruiseKinds lets users write CRRs, image jobs, the workloads and SidecarSets (RBAC is on).
func grantKruiseKinds(t *testing.T, kube kubernetes.Interface, users ...string) {
	t.Helper()
	cx := context.Background()
	_, err := kube.RbacV1().ClusterRoles().Create(cx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps.kruise.io"},
			Resources: []string{"containerrecreaterequests", "imagepulljobs", "imagelistpulljobs", "clonesets", "statefulsets", "daemonsets", "sidecarsets"},
			Verbs:     []string{"get", "list", "create", "update", "delete"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i, u := range users {
		_, err := kube.RbacV1().ClusterRoleBindings().Create(cx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kruise-writer-%d", i)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kruise-writer"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: u}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}
