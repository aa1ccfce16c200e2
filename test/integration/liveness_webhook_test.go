package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/webhook/livenessinjection"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

// livenessEntry is menhancedliveness.kb.io as the chart renders it with featureGates
// EnhancedLivenessProbe=true (deploy/base has the defaults, without it; test/chart checks that
// the chart's entry has these matchConditions), calling addr.
func livenessEntry(addr string, ca []byte) admissionregistrationv1.MutatingWebhook {
	url := "https://" + addr + livenessinjection.Path
	return admissionregistrationv1.MutatingWebhook{
		Name:                    "menhancedliveness.kb.io",
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}},
		NamespaceSelector: podscope.NamespaceSelector("kruise-system"),
		MatchConditions:   livenessinjection.MatchConditions("kruise-system"),
	}
}

// TestEnhancedLivenessWebhookInAnAPIServer: the API server accepts the entry's CEL; an opted-in
// pod of a CloneSet is created without its livenessProbe, which is in the probe context
// annotation; a pod without the annotation is never sent; with the webhook server stopped an
// opted-in pod is still created, its livenessProbe left to the kubelet (failurePolicy Ignore).
func TestEnhancedLivenessWebhookInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	const ns = "liveness-it"
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, tctx := ktesting.NewTestContext(t)
	serverCtx, stopServer := context.WithCancel(tctx)
	t.Cleanup(stopServer)

	seen := &seenRequests{}
	wh := livenessinjection.Webhook("kruise-system")
	inner := wh.Admitter
	wh.Admitter = server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
		seen.add(req.Namespace + "/" + podName(req))
		return inner.Admit(ctx, req)
	})
	addr, ca := serveWebhooks(t, serverCtx, wh)
	_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx(t), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-mutating-webhook-configuration"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{livenessEntry(addr, ca)},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "the API server accepts the entry and its CEL")

	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
	pod := func(name string, optIn bool) *corev1.Pod {
		p := ownedPod(name, "CloneSet", "web")
		p.Spec.Containers[0].LivenessProbe = probe.DeepCopy()
		if optIn {
			p.Annotations = map[string]string{appsv1alpha1.UsingEnhancedLivenessAnnotation: "true"}
		}
		return p
	}
	pods := kube.CoreV1().Pods(ns)

	got, err := pods.Create(ctx(t), pod("opted-in", true), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Nil(t, got.Spec.Containers[0].LivenessProbe, "kruise-daemon probes it now")
	probes, err := nodeprobe.ReadProbeContext(got.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	require.NoError(t, err)
	require.Len(t, probes, 1)
	assert.Equal(t, "app", probes[0].Name)
	assert.Equal(t, intstr.FromInt32(80), probes[0].LivenessProbe.TCPSocket.Port)
	assert.EqualValues(t, 10, probes[0].LivenessProbe.PeriodSeconds, "the API server's defaults, applied before the webhook")

	got, err = pods.Create(ctx(t), pod("plain", false), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotNil(t, got.Spec.Containers[0].LivenessProbe)
	assert.Equal(t, []string{ns + "/opted-in"}, seen.all(), "a pod without the annotation is never sent")

	stopServer()
	got, err = pods.Create(ctx(t), pod("during-outage", true), metav1.CreateOptions{})
	require.NoError(t, err, "failurePolicy Ignore: created while kruise is unreachable")
	assert.NotNil(t, got.Spec.Containers[0].LivenessProbe, "the kubelet keeps probing it")
	assert.Empty(t, got.Annotations[appsv1alpha1.ContainerProbeContextAnnotation])
}
