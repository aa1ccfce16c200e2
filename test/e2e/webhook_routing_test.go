//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// bridgeHostIP is the host's own address on the local cluster's pod bridge: the test serves its
// webhook there, the only non-loopback address anything of the cluster may listen on.
const bridgeHostIP = "10.244.0.1"

// The API server calls a webhook Service at its endpoints, never at its ClusterIP (routed to
// unreachable here), for admission and for CRD conversion alike: kube-apiserver runs with
// --enable-aggregator-routing=true (docs/development.md, "Webhooks on the local cluster"). The
// Service has no selector; its EndpointSlice names a server this test runs on the bridge address,
// at a port other than the Service's, as a pod's targetPort would.
func TestWebhookEndpointRouting(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "webhook-routing")
	const svcName = "routing-webhook"

	hook := startRoutingWebhook(t, svcName+"."+ns+".svc")
	createEndpointService(ctx, t, f, ns, svcName, hook.port)

	t.Run("admission", func(t *testing.T) {
		cfgName := "kruise-e2e-" + ns
		_, err := f.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx,
			&admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: cfgName},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{
					Name:                    "routing.e2e.kruise.io",
					AdmissionReviewVersions: []string{"v1"},
					SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
					FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
					TimeoutSeconds:          ptr.To[int32](5),
					// This namespace only: no other test ever meets this webhook.
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
					Rules: []admissionregistrationv1.RuleWithOperations{{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
							Resources: []string{"configmaps"}},
					}},
					ClientConfig: admissionregistrationv1.WebhookClientConfig{
						CABundle: hook.caPEM,
						Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: svcName, Path: ptr.To("/validate"), Port: ptr.To[int32](443)},
					},
				}},
			}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = f.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), cfgName, metav1.DeleteOptions{})
		})
		// The API server picks the configuration up from its informer: create ConfigMaps until one
		// reaches the webhook. With FailurePolicy Fail, a webhook the API server cannot reach
		// refuses the create, and that error is what the wait reports.
		framework.WaitFor(ctx, t, 30*time.Second, fmt.Sprintf("a ConfigMap create to reach the webhook at %s:%d", bridgeHostIP, hook.port),
			func(ctx context.Context) (bool, string, error) {
				name := fmt.Sprintf("cm-%d", time.Now().UnixNano())
				_, err := f.Client.CoreV1().ConfigMaps(ns).Create(ctx,
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				return hook.saw("validate " + ns + "/" + name), fmt.Sprintf("create %s: %v", name, err), nil
			})
	})

	t.Run("conversion", func(t *testing.T) {
		ext, err := apiextensionsclient.NewForConfig(f.Config)
		if err != nil {
			t.Fatal(err)
		}
		group := ns + ".e2e.kruise.io"
		crd := routingCRD(group, ns, svcName, hook.caPEM)
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
		})
		dyn := f.Dynamic(t)
		v1 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "routings"}).Namespace(ns)
		v2 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "routings"}).Namespace(ns)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Routing",
			"metadata": map[string]any{"name": "r"}, "spec": map[string]any{"x": int64(1)},
		}}
		var got *unstructured.Unstructured
		framework.WaitFor(ctx, t, 30*time.Second, "a v1 object to be read as v2", func(ctx context.Context) (bool, string, error) {
			// Until the new CRD is served, the create fails; once it exists, AlreadyExists.
			_, createErr := v1.Create(ctx, obj, metav1.CreateOptions{})
			var err error
			got, err = v2.Get(ctx, "r", metav1.GetOptions{})
			return err == nil, fmt.Sprintf("create v1: %v; get v2: %v", createErr, err), nil
		})
		if got.GetAPIVersion() != group+"/v2" || got.GetAnnotations()["e2e.kruise.io/converted-by"] != "routing-webhook" {
			t.Fatalf("the v2 read was not converted by the webhook: apiVersion %q, annotations %v", got.GetAPIVersion(), got.GetAnnotations())
		}
		if !hook.saw("convert " + group + "/v2") {
			t.Fatal("the webhook recorded no conversion to v2")
		}
	})
}

// routingWebhook is an HTTPS admission and conversion webhook on the bridge address that records
// what it was asked.
type routingWebhook struct {
	port  int
	caPEM []byte
	mu    sync.Mutex
	calls map[string]bool
}

func (h *routingWebhook) record(call string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[call] = true
}

func (h *routingWebhook) saw(call string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[call]
}

func startRoutingWebhook(t *testing.T, serverName string) *routingWebhook {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(serverName, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(bridgeHostIP, "0"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("listening on the bridge address (is the local cluster up?): %v", err)
	}
	h := &routingWebhook{port: ln.Addr().(*net.TCPAddr).Port, caPEM: certPEM, calls: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad AdmissionReview", http.StatusBadRequest)
			return
		}
		h.record("validate " + review.Request.Namespace + "/" + review.Request.Name)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	})
	mux.HandleFunc("/convert", func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad ConversionReview", http.StatusBadRequest)
			return
		}
		h.record("convert " + review.Request.DesiredAPIVersion)
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw.Raw); err != nil {
				resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				break
			}
			u.SetAPIVersion(review.Request.DesiredAPIVersion)
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann["e2e.kruise.io/converted-by"] = "routing-webhook"
			u.SetAnnotations(ann)
			b, _ := u.MarshalJSON()
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
		}
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(&review)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

// createEndpointService creates a Service without a selector and its one EndpointSlice: the
// bridge address at port, under the Service port's name.
func createEndpointService(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, port int) {
	t.Helper()
	_, err := f.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port)),
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "e2e.kruise.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{bridgeHostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Before 1.33 the API server finds a webhook Service's endpoints in its Endpoints object,
	// which nothing mirrors from a hand-made EndpointSlice (a Service with a selector gets both).
	if f.ServerMinor(t) < 33 {
		_, err = f.Client.CoreV1().Endpoints(ns).Create(ctx, &corev1.Endpoints{ //nolint:staticcheck // the API server reads it before 1.33
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: bridgeHostIP}},
				Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// routingCRD is a namespaced kind served in v1 (stored) and v2, converted by the webhook.
func routingCRD(group, ns, svc string, caPEM []byte) *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr.To(true),
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "routings." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Routing", ListKind: "RoutingList", Plural: "routings", Singular: "routing"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						CABundle: caPEM,
						Service:  &apiextensionsv1.ServiceReference{Namespace: ns, Name: svc, Path: ptr.To("/convert"), Port: ptr.To[int32](443)},
					},
				},
			},
		},
	}
}
