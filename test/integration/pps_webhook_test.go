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
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/ppsinjection"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

// ppsEntries are mpersistentpodstate-pod.kb.io and vpersistentpodstate.kb.io as the chart renders
// them (test/chart checks the chart against the same values), calling addr.
func ppsEntries(addr string, ca []byte) (admissionregistrationv1.MutatingWebhook, admissionregistrationv1.ValidatingWebhook) {
	podURL := "https://" + addr + ppsinjection.Path
	ppsURL := "https://" + addr + validate.PersistentPodStatePath
	rule := func(group, version, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)}}}
	}
	return admissionregistrationv1.MutatingWebhook{
			Name:                    "mpersistentpodstate-pod.kb.io",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &podURL, CABundle: ca},
			Rules:                   rule("", "v1", "pods", admissionregistrationv1.Create),
			NamespaceSelector:       podscope.NamespaceSelector("kruise-system"),
			MatchConditions:         ppsinjection.MatchConditions("kruise-system"),
		}, admissionregistrationv1.ValidatingWebhook{
			Name:                    "vpersistentpodstate.kb.io",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &ppsURL, CABundle: ca},
			Rules:                   rule("apps.kruise.io", "v1alpha1", "persistentpodstates", admissionregistrationv1.Create, admissionregistrationv1.Update),
		}
}

// TestPersistentPodStateWebhooksInAnAPIServer: the API server accepts both entries and their CEL;
// a StatefulSet's pod with a recorded state is created with the recorded hostname in its
// nodeSelector and the injected annotation; a CloneSet's pod is never sent; once the recorded node
// is deleted, the hostname is only preferred; a PersistentPodState of a Deployment, a second one
// of a StatefulSet and a changed targetRef are refused; with the webhook server stopped a pod is
// still created, unsteered (failurePolicy Ignore).
func TestPersistentPodStateWebhooksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	kruise, err := kruiseclient.NewForConfig(c.config)
	require.NoError(t, err)
	const ns = "pps-it"
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, tctx := ktesting.NewTestContext(t)
	serverCtx, stopServer := context.WithCancel(tctx)
	t.Cleanup(stopServer)

	seen := &seenRequests{}
	inject := ppsinjection.Webhook(ppsinjection.Lookups{States: kruise.AppsV1alpha1(), Nodes: kube.CoreV1()}, "kruise-system")
	inner := inject.Admitter
	inject.Admitter = server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
		seen.add(req.Namespace + "/" + podName(req))
		return inner.Admit(ctx, req)
	})
	addr, ca := serveWebhooks(t, serverCtx, inject, validate.PersistentPodStateWebhook(kruise.AppsV1alpha1()))
	mutating, validating := ppsEntries(addr, ca)
	_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx(t), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-mutating-webhook-configuration"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mutating},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "the API server accepts the pod entry and its CEL")
	_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx(t), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-validating-webhook-configuration"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{validating},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	const host = "kubernetes.io/hostname"
	for _, n := range []string{"n1", "n2"} {
		_, err = kube.CoreV1().Nodes().Create(ctx(t), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{host: n}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	states := kruise.AppsV1alpha1().PersistentPodStates(ns)
	pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{host}},
	}}
	created, err := states.Create(ctx(t), pps, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status.PodStates = map[string]appsv1alpha1.PodState{
		"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{host: "n1"}},
		"web-1": {NodeName: "n2", NodeTopologyLabels: map[string]string{host: "n2"}},
	}
	_, err = states.UpdateStatus(ctx(t), created, metav1.UpdateOptions{})
	require.NoError(t, err)

	stsPod := func(name string) *corev1.Pod {
		p := ownedPod(name, "StatefulSet", "web")
		p.OwnerReferences[0].APIVersion = "apps/v1"
		return p
	}
	pods := kube.CoreV1().Pods(ns)
	got, err := pods.Create(ctx(t), stsPod("web-0"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{host: "n1"}, got.Spec.NodeSelector)
	assert.Equal(t, "web", got.Annotations[appsv1alpha1.InjectedPersistentPodStateAnnotation])

	_, err = pods.Create(ctx(t), ownedPod("clone-0", "CloneSet", "web"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{ns + "/web-0"}, seen.all(), "a CloneSet's pod is never sent")

	require.NoError(t, kube.CoreV1().Nodes().Delete(ctx(t), "n2", metav1.DeleteOptions{}))
	got, err = pods.Create(ctx(t), stsPod("web-1"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.Spec.NodeSelector, "n2 is gone: nothing required")
	require.NotNil(t, got.Spec.Affinity)
	assert.Equal(t, []corev1.PreferredSchedulingTerm{{Weight: ppsinjection.NodeGoneWeight, Preference: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: host, Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}}}},
		got.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)

	deploy := pps.DeepCopy()
	deploy.Name, deploy.Spec.TargetReference.Kind = "deploy", "Deployment"
	_, err = states.Create(ctx(t), deploy, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "vpersistentpodstate.kb.io")
	second := pps.DeepCopy()
	second.Name = "web-again"
	_, err = states.Create(ctx(t), second, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "targets it already")
	moved, err := states.Get(ctx(t), "web", metav1.GetOptions{})
	require.NoError(t, err)
	moved.Spec.TargetReference.Name = "db"
	_, err = states.Update(ctx(t), moved, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "targetRef cannot be changed")

	stopServer()
	require.NoError(t, pods.Delete(ctx(t), "web-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}))
	got, err = pods.Create(ctx(t), stsPod("web-0"), metav1.CreateOptions{})
	require.NoError(t, err, "failurePolicy Ignore: created while kruise is unreachable")
	assert.Empty(t, got.Spec.NodeSelector, "unsteered")
}
