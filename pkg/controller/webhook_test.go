package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	wlp "github.com/nodekruise/kruise/pkg/webhook/priorityinjection"
	"github.com/nodekruise/kruise/pkg/webhook/sidecarinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// webhookConfigs are the two configurations the chart renders with
// webhook.enabled, before the certificate manager has written a caBundle.
func webhookConfigs() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	path := wlp.Path
	return &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: certs.MutatingWebhookConfigurationName},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "mpod.kb.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
					Namespace: "kruise-system", Name: certs.ServiceName, Path: &path,
				}},
				MatchConditions: wlp.MatchConditions("kruise-system"),
			}},
		},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: certs.ValidatingWebhookConfigurationName}}
}

// hooked is a controller started with the webhooks on.
type hooked struct {
	*running
	webhook string // host:port
}

func startWithWebhooks(t *testing.T, o *Options, client *fake.Clientset) *hooked {
	t.Helper()
	return startWithWebhooksAndKruise(t, o, client, kruisefake.NewSimpleClientset())
}

func startWithWebhooksAndKruise(t *testing.T, o *Options, client *fake.Clientset, kruiseClient *kruisefake.Clientset) *hooked {
	t.Helper()
	t.Setenv(PodNamespaceEnv, "kruise-system")
	o.WebhookEnabled = true
	o.WebhookAddr = "127.0.0.1:0"
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	addrCh, hookCh := make(chan net.Addr, 1), make(chan net.Addr, 1)
	r := &running{stop: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- run(ctx, o, deps{
			client: client, kruiseClient: kruiseClient, leases: client.CoordinationV1(), identity: "test-replica_1234",
			listening:        func(a net.Addr) { addrCh <- a },
			webhookListening: func(a net.Addr) { hookCh <- a },
		})
	}()
	h := &hooked{running: r}
	for h.base == "" || h.webhook == "" {
		select {
		case a := <-addrCh:
			h.base = "http://" + a.String()
		case a := <-hookCh:
			h.webhook = a.String()
		case err := <-r.done:
			t.Fatalf("controller exited before listening: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("controller did not start listening")
		}
	}
	t.Cleanup(func() {
		cancel()
		_ = r.wait(t)
	})
	return h
}

// caFromConfig is the caBundle the certificate manager wrote into the
// mutating configuration: what the API server trusts.
func caFromConfig(t *testing.T, client *fake.Clientset) []byte {
	t.Helper()
	m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, m.Webhooks[0].ClientConfig.CABundle)
	return m.Webhooks[0].ClientConfig.CABundle
}

// admit sends an AdmissionReview for pod to /mutate-pod as the API server
// does.
func (h *hooked) admit(t *testing.T, ca []byte, pod *corev1.Pod) *admissionv1.AdmissionResponse {
	t.Helper()
	return h.review(t, ca, wlp.Path, &admissionv1.AdmissionRequest{
		UID: "0b7e3c1a-5d2f-4e6a-9c8b-7a6f5e4d3c2b", Operation: admissionv1.Create, Namespace: "default",
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:   runtime.RawExtension{Raw: mustJSON(t, pod)},
	})
}

// review sends an AdmissionReview of req to path as the API server does:
// over TLS, trusting only ca, checking the Service's name.
func (h *hooked) review(t *testing.T, ca []byte, path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: certs.ServiceHost(certs.ServiceName, "kruise-system"), MinVersion: tls.VersionTLS12,
	}}}
	defer c.CloseIdleConnections()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	require.NoError(t, err)
	resp, err := c.Post("https://"+h.webhook+path+"?timeout=5s", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(out))
	var rev admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(out, &rev))
	require.NotNil(t, rev.Response)
	return rev.Response
}

func markedPod() *corev1.Pod {
	return gen.Pod("web", gen.SetPodNamespace("default"),
		gen.AddPodContainer(corev1.Container{Name: "proxy", Image: "proxy:1", Env: []corev1.EnvVar{{Name: lp.EnvPriority, Value: "1"}}}),
		gen.AddPodContainer(corev1.Container{Name: "app", Image: "app:1"}))
}

// Off (the default), nothing listens on the webhook port and /readyz has no
// webhook check.
func TestWebhooksOffByDefault(t *testing.T) {
	assert.False(t, NewOptions().WebhookEnabled)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().String()
	require.NoError(t, ln.Close())

	o := testOptions()
	o.WebhookAddr = port
	r := start(t, o, fake.NewClientset(), newFake("x"))
	require.Eventually(t, func() bool { code, _ := r.get(t, "/readyz"); return code == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	_, body := r.get(t, "/readyz?verbose")
	assert.NotContains(t, body, "webhook")
	_, metrics := r.get(t, "/metrics")
	assert.NotContains(t, metrics, "kruise_webhook_")
	conn, err := net.DialTimeout("tcp", port, time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("something listens on the webhook address %s with the webhooks off", port)
	}
	r.stop()
	require.NoError(t, r.wait(t))
}

// On, a replica that does not lead issues the certificate, writes its CA
// into the configurations, becomes ready, and answers an AdmissionReview for
// a marked pod over TLS with the launch-priority patch.
func TestWebhooksServedByAStandby(t *testing.T) {
	now := time.Now()
	m, v := webhookConfigs()
	client := fake.NewClientset(m, v, gen.Lease(DefaultLeaseName, gen.SetLeaseNamespace("kruise-system"), gen.SetLeaseHolder("other-replica_abcd"),
		gen.SetLeaseDurationSeconds(3600), gen.SetLeaseAcquireTime(now), gen.SetLeaseRenewTime(now)))
	h := startWithWebhooks(t, testOptions(), client)

	require.Eventually(t, func() bool { code, _ := h.get(t, "/readyz"); return code == http.StatusOK }, 10*time.Second, 10*time.Millisecond,
		"a standby with a certificate its configurations trust is ready")
	_, body := h.get(t, "/readyz?verbose")
	assert.Contains(t, body, "[+]webhook ok")
	assert.Contains(t, body, "[+]webhook-certificates ok")
	assert.NotContains(t, body, "sidecarset", "readiness never waits on a list of kruise's kinds (it can need /convert)")
	require.Eventually(t, func() bool { return leaseGets(client) >= 2 }, 10*time.Second, 10*time.Millisecond)

	resp := h.admit(t, caFromConfig(t, client), markedPod())
	require.True(t, resp.Allowed, "%+v", resp.Result)
	want, reason := wlp.Review(&admissionv1.AdmissionRequest{
		UID: "0b7e3c1a-5d2f-4e6a-9c8b-7a6f5e4d3c2b", Operation: admissionv1.Create, Namespace: "default",
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:   runtime.RawExtension{Raw: mustJSON(t, markedPod())},
	})
	require.Empty(t, reason)
	require.NotEmpty(t, want.Patch)
	assert.JSONEq(t, string(want.Patch), string(resp.Patch))
	assert.Contains(t, string(resp.Patch), `"name":"web-barrier"`)
	assert.Equal(t, types.UID("0b7e3c1a-5d2f-4e6a-9c8b-7a6f5e4d3c2b"), resp.UID)

	_, metrics := h.get(t, "/metrics")
	assert.Contains(t, metrics, `kruise_webhook_admission_requests_total{result="patched",webhook="pod-mutate"} 1`)
	assert.Contains(t, metrics, "kruise_webhook_conversion_requests_total")
	assert.Contains(t, metrics, "kruise_webhook_certificate_expiry_timestamp_seconds ", "a standby serves with a certificate too")

	_, err := client.CoordinationV1().Leases("kruise-system").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "other-replica_abcd", *lease(t, client).Spec.HolderIdentity, "the standby never led")
}

// Listing SidecarSets needs /convert while some are stored in another version, and the API
// server calls /convert only on ready replicas: a replica must become ready while that list
// fails, or kruise would never come back once every replica was down. Until the list succeeds a
// pod sent for injection is refused, saying why, never created without its sidecars.
func TestReadyWhileSidecarSetsCannotBeListed(t *testing.T) {
	m, v := webhookConfigs()
	client := fake.NewClientset(m, v)
	kruiseClient := kruisefake.NewSimpleClientset()
	kruiseClient.PrependReactor("list", "sidecarsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New(`conversion webhook for apps.kruise.io/v1alpha1, Kind=SidecarSet failed: ` +
			`Post "https://kruise-webhook-service.kruise-system.svc:443/convert": no endpoints available for service "kruise-webhook-service"`)
	})
	h := startWithWebhooksAndKruise(t, testOptions(), client, kruiseClient)
	require.Eventually(t, func() bool { code, _ := h.get(t, "/readyz"); return code == http.StatusOK }, 10*time.Second, 10*time.Millisecond,
		"ready, so that the API server may call this replica's /convert")

	pod := gen.Pod("web", gen.SetPodNamespace("default"), gen.AddPodLabels(map[string]string{"app": "web"}),
		gen.AddPodContainer(corev1.Container{Name: "app", Image: "app:1"}))
	resp := h.review(t, caFromConfig(t, client), sidecarinjection.Path, &admissionv1.AdmissionRequest{
		UID: "5d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a", Operation: admissionv1.Create, Namespace: "default",
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:   runtime.RawExtension{Raw: mustJSON(t, pod)},
	})
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "has not read the SidecarSets yet")
}

// Every replica serves the validating webhooks too (CRRs, image jobs,
// CloneSets); the CRR webhook reads the pod with the controller's client.
func TestValidatingWebhooksServed(t *testing.T) {
	m, v := webhookConfigs()
	client := fake.NewClientset(m, v, gen.Pod("web", gen.SetPodNamespace("default"), gen.AddPodContainer(corev1.Container{Name: "main"})))
	h := startWithWebhooks(t, testOptions(), client)
	require.Eventually(t, func() bool { code, _ := h.get(t, "/readyz"); return code == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
	ca := caFromConfig(t, client)

	kruiseRequest := func(resource, kind string, obj any) *admissionv1.AdmissionRequest {
		return &admissionv1.AdmissionRequest{
			UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", Operation: admissionv1.Create, Namespace: "default",
			Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: kind},
			Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: resource},
			Object:   runtime.RawExtension{Raw: mustJSON(t, obj)},
		}
	}
	crr := gen.CRR("r", gen.SetCRRNamespace("default"), gen.SetCRRPodName("web"), gen.SetCRRContainers("main", "ghost"))
	resp := h.review(t, ca, validate.CRRPath, kruiseRequest("containerrecreaterequests", "ContainerRecreateRequest", crr))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `spec.containers[1].name: Invalid value: "ghost": container "ghost" not found in pod "web"`)
	crr = gen.CRR("r", gen.SetCRRNamespace("default"), gen.SetCRRPodName("web"), gen.SetCRRContainers("main"))
	resp = h.review(t, ca, validate.CRRPath, kruiseRequest("containerrecreaterequests", "ContainerRecreateRequest", crr))
	assert.True(t, resp.Allowed, "%+v", resp.Result)

	job := gen.ImagePullJob("pull", gen.SetImagePullJobNamespace("default"))
	job.Spec.Image = "Not Valid"
	resp = h.review(t, ca, validate.ImagePullJobPath, kruiseRequest("imagepulljobs", "ImagePullJob", job))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `spec.image: Invalid value: "Not Valid": invalid image reference "Not Valid"`)
	list := gen.ImageListPullJob("list", gen.SetImageListPullJobNamespace("default"), gen.SetImageListPullJobImages("busybox", "Not Valid"))
	resp = h.review(t, ca, validate.ImageListPullJobPath, kruiseRequest("imagelistpulljobs", "ImageListPullJob", list))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `spec.images[1]: Invalid value: "Not Valid"`)

	cs := &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1beta1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}},
			},
		},
	}
	resp = h.review(t, ca, validate.CloneSetPath, kruiseRequest("clonesets", "CloneSet", cs))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `spec.template.metadata.labels: Invalid value: "app=api": does not match the selector "app=web"`)

	_, metrics := h.get(t, "/metrics")
	for _, line := range []string{
		`kruise_webhook_admission_rejections_total{reason="InvalidSelector",webhook="cloneset-validate"} 1`,
		`kruise_webhook_admission_rejections_total{reason="ContainerNotFound",webhook="containerrecreaterequest-validate"} 1`,
		`kruise_webhook_admission_requests_total{result="allowed",webhook="containerrecreaterequest-validate"} 1`,
		`kruise_webhook_admission_rejections_total{reason="InvalidImage",webhook="imagepulljob-validate"} 1`,
		`kruise_webhook_admission_rejections_total{reason="InvalidImage",webhook="imagelistpulljob-validate"} 1`,
	} {
		assert.Contains(t, metrics, line)
	}
}

// /readyz follows the certificate manager: a missing configuration keeps
// the replica unready, naming it; once it exists the replica becomes ready.
func TestReadyzWaitsForTheWebhookCertificates(t *testing.T) {
	m, v := webhookConfigs()
	client := fake.NewClientset(m)
	// The fake API server drops what is created between an informer's list and its watch: the
	// configuration is created only once the manager's watch of it is registered.
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("validatingwebhookconfigurations", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	o := testOptions()
	o.LeaderElect = false
	h := startWithWebhooks(t, o, client)

	require.Eventually(t, func() bool {
		_, body := h.get(t, "/readyz?verbose")
		return bytes.Contains([]byte(body), []byte(certs.ValidatingWebhookConfigurationName))
	}, 10*time.Second, 10*time.Millisecond, "the missing configuration is named")
	code, body := h.get(t, "/readyz?verbose")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "[-]webhook-certificates failed")

	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the certificate manager never watched ValidatingWebhookConfigurations")
	}
	_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), v, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { code, _ := h.get(t, "/readyz"); return code == http.StatusOK }, 10*time.Second, 10*time.Millisecond,
		"ready once the configuration exists and carries the CA")
}

// EnableExternalCerts makes the manager only read: with no Secret the
// replica stays unready and nothing is written.
func TestExternalCertsWriteNothing(t *testing.T) {
	m, v := webhookConfigs()
	client := fake.NewClientset(m, v)
	o := testOptions()
	o.LeaderElect = false
	o.Features = gateFrom(t, "EnableExternalCerts=true")
	h := startWithWebhooks(t, o, client)

	require.Eventually(t, func() bool {
		_, body := h.get(t, "/readyz?verbose")
		return bytes.Contains([]byte(body), []byte(certs.SecretName))
	}, 10*time.Second, 10*time.Millisecond, "the missing Secret is named")
	code, _ := h.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	for _, a := range client.Actions() {
		switch a.GetResource().Resource {
		case "secrets", "mutatingwebhookconfigurations", "validatingwebhookconfigurations":
			assert.Contains(t, []string{"get", "list", "watch"}, a.GetVerb(), "external mode wrote %s", a.GetResource().Resource)
		}
	}
}

func TestValidateWebhookOptions(t *testing.T) {
	o := testOptions()
	o.WebhookEnabled = true
	require.NoError(t, o.Validate())
	o.WebhookAddr = ""
	o.WebhookServiceName = "Not_A_Service"
	o.WebhookCertValidity = time.Second
	err := o.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--webhook-addr must not be empty")
	assert.Contains(t, err.Error(), `--webhook-service-name "Not_A_Service"`)
	assert.Contains(t, err.Error(), "--webhook-cert-validity must be between 1m0s")

	o.WebhookEnabled = false
	assert.NoError(t, o.Validate(), "webhook flags are only checked with --webhook-enabled")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

// Admission reads with the webhook clients, whose rate limit is not the controllers': here the
// controllers' client has no pod "web" and the webhook client has it, and the CRR naming it is
// admitted.
func TestWebhooksReadWithTheirOwnClient(t *testing.T) {
	t.Setenv(PodNamespaceEnv, "kruise-system")
	o := testOptions()
	o.WebhookEnabled = true
	o.WebhookAddr = "127.0.0.1:0"
	pod := gen.Pod("web", gen.SetPodNamespace("default"), gen.AddPodContainer(corev1.Container{Name: "main"}))
	d := deps{client: fake.NewClientset(), kruiseClient: kruisefake.NewSimpleClientset(),
		webhookClient: fake.NewClientset(pod), webhookKruiseClient: kruisefake.NewSimpleClientset()}
	w, err := newWebhooks(o, d, "kruise-system", prometheus.NewRegistry())
	require.NoError(t, err)
	crr := gen.CRR("r", gen.SetCRRNamespace("default"), gen.SetCRRPodName("web"), gen.SetCRRContainers("main"))
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", Operation: admissionv1.Create, Namespace: "default",
			Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "ContainerRecreateRequest"},
			Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "containerrecreaterequests"},
			Object:   runtime.RawExtension{Raw: mustJSON(t, crr)},
		},
	})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, validate.CRRPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	w.server.Handler().ServeHTTP(rec, r)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	require.NotNil(t, out.Response)
	assert.True(t, out.Response.Allowed, "the pod was read with the controllers' client: %+v", out.Response.Result)
}
