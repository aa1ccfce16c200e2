package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/webhook/deletionprotection"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// TestDeletionProtectionWebhookInAnAPIServer installs the chart's vdeletionprotection.kb.io entry
// (with both deletion-protection gates; only its client config points at a webhook server this
// test runs on loopback) into a real API server, with the webhook reading that API server: a
// Namespace labelled Cascading is refused while it holds an active pod or a Bound claim and
// admitted once neither is left; a CRD labelled Cascading is refused while an object of it
// remains (listed with the metadata-only client) and admitted once it is gone.
func TestDeletionProtectionWebhookInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	meta, err := metadata.NewForConfig(c.config)
	require.NoError(t, err)
	wh, err := deletionprotection.Webhook(deletionprotection.Options{
		Lookups: deletionprotection.APILookups{Client: kube, Metadata: meta}, CRDCascading: true})
	require.NoError(t, err)
	_, sctx := ktesting.NewTestContext(t)
	addr, ca := serveWebhooks(t, sctx, wh)
	installDeletionWebhook(t, kube, renderChartTemplate(t, "templates/webhook.yaml",
		`featureGates=ResourcesDeletionProtection=true\,DeletionProtectionForCRDCascadingGate=true`), addr, ca)
	cx := context.Background()
	cascading := map[string]string{deletionprotection.Label: deletionprotection.Cascading}

	// The configuration takes effect once the API server's informer has it: wait until a
	// Cascading namespace with a pod is refused.
	const ns = "dp-webhook"
	_, err = kube.CoreV1().Namespaces().Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: cascading}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Pods(ns).Create(cx, gen.Pod("holder", gen.SetPodNamespace(ns), gen.SetPodContainers(corev1.Container{Name: "main", Image: "busybox"})), metav1.CreateOptions{})
	require.NoError(t, err)
	var refusal error
	waitFor(t, "the webhook to refuse a Cascading namespace with a pod", func(ctx context.Context) (bool, error) {
		refusal = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return refusal != nil, nil
	})
	requireProtectedBy(t, refusal, "vdeletionprotection.kb.io", "Namespace dp-webhook is labelled policy.kruise.io/delete-protection=Cascading and still holds 1 active pod")

	// The pod finishes; a Bound claim still holds the namespace.
	pod, err := kube.CoreV1().Pods(ns).Get(cx, "holder", metav1.GetOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodSucceeded
	_, err = kube.CoreV1().Pods(ns).UpdateStatus(cx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	claim, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(cx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, kube.CoreV1().Namespaces().Delete(cx, ns, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}),
		"a finished pod and a Pending claim hold nothing")
	claim.Status.Phase = corev1.ClaimBound
	_, err = kube.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(cx, claim, metav1.UpdateOptions{})
	require.NoError(t, err)
	requireProtectedBy(t, kube.CoreV1().Namespaces().Delete(cx, ns, metav1.DeleteOptions{}), "vdeletionprotection.kb.io",
		"still holds 1 Bound PersistentVolumeClaim", "kubectl label namespaces dp-webhook policy.kruise.io/delete-protection-")
	// Deleted, the claim stays (its pvc-protection finalizer: no controller runs here) but no
	// longer counts.
	require.NoError(t, kube.CoreV1().PersistentVolumeClaims(ns).Delete(cx, "data", metav1.DeleteOptions{}))
	require.NoError(t, kube.CoreV1().Namespaces().Delete(cx, ns, metav1.DeleteOptions{}), "nothing active left")

	// A CRD labelled Cascading, with one object.
	crd := dpCRD("webhooked", deletionprotection.Cascading)
	_, err = c.apiext.ApiextensionsV1().CustomResourceDefinitions().Create(cx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.config)
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(crd.Spec.Group + "/v1")
	obj.SetKind(crd.Spec.Names.Kind)
	obj.SetName("one")
	waitFor(t, "the CRD served", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
		return err == nil, nil
	})
	crds := c.apiext.ApiextensionsV1().CustomResourceDefinitions()
	requireProtectedBy(t, crds.Delete(cx, crd.Name, metav1.DeleteOptions{}), "vdeletionprotection.kb.io",
		"CustomResourceDefinition "+crd.Name+" is labelled policy.kruise.io/delete-protection=Cascading and 1 object of it remain")
	require.NoError(t, dyn.Resource(gvr).Namespace("default").Delete(cx, "one", metav1.DeleteOptions{}))
	require.NoError(t, crds.Delete(cx, crd.Name, metav1.DeleteOptions{}), "no object left")
}

// requireProtectedBy checks err is a 403 from webhook with every substring of wants.
func requireProtectedBy(t *testing.T, err error, webhook string, wants ...string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	for _, w := range append(wants, `admission webhook "`+webhook+`" denied the request`, deletionprotection.MessagePrefix) {
		require.True(t, strings.Contains(err.Error(), w), "%q lacks %q", err.Error(), w)
	}
}

// installDeletionWebhook creates file's ValidatingWebhookConfiguration with only its
// vdeletionprotection.kb.io entry, calling the server at addr.
func installDeletionWebhook(t *testing.T, kube kubernetes.Interface, file, addr string, ca []byte) {
	t.Helper()
	raw, err := os.ReadFile(file)
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
		var keep []admissionregistrationv1.ValidatingWebhook
		for _, w := range cfg.Webhooks {
			if w.Name == "vdeletionprotection.kb.io" {
				url := "https://" + addr + *w.ClientConfig.Service.Path
				w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
				keep = append(keep, w)
			}
		}
		require.Len(t, keep, 1)
		cfg.Webhooks = keep
		_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
		require.NoError(t, err)
		return
	}
	t.Fatal("no ValidatingWebhookConfiguration in " + file)
}
