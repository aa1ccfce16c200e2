package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/spreadscope"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/spreadinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

const spreadNS = "ws-it"

// TestWorkloadSpreadWebhooksInAnAPIServer installs WorkloadSpread's entries as deploy/base
// renders them, serves the pod and spread webhooks and runs the scope controller, then checks in
// a real API server that the scope's CEL is accepted, that a targeted pod's create gets its
// subset (affinity, annotation, status ledger) and its delete is recorded, that a pod of a
// workload no spread targets is never sent, and that with the webhook server stopped such a pod
// is still created while a targeted one waits (failurePolicy Fail).
func TestWorkloadSpreadWebhooksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spreadNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, tctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(tctx)
	t.Cleanup(cancel)

	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	cf := informers.NewSharedInformerFactory(kube, 0)
	targets := spreadinjection.NewDynamicTargets(dyn, kube.Discovery())
	wh := &spreadinjection.Webhook{
		Spreads:         spreadinjection.CachedSpreads{Lister: kf.Apps().V1alpha1().WorkloadSpreads().Lister(), Client: c.kruise.AppsV1alpha1()},
		Targets:         targets,
		Pods:            spreadinjection.LivePods{Client: kube.CoreV1()},
		ReplicaSetOwner: spreadinjection.ListerReplicaSetOwner(cf.Apps().V1().ReplicaSets().Lister()),
		KruiseNamespace: "kruise-system",
	}
	seen := &seenRequests{}
	record := func(w server.Webhook) server.Webhook {
		inner := w.Admitter
		w.Admitter = server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
			seen.add(string(req.Operation) + " " + req.Namespace + "/" + podName(req))
			return inner.Admit(ctx, req)
		})
		return w
	}
	spreadWH := validate.WorkloadSpreadWebhook(c.kruise.AppsV1alpha1(), true, targets, &spreadscope.Includer{Client: kube, Spreads: c.kruise.AppsV1alpha1()})
	serverCtx, stopServer := context.WithCancel(tctx)
	addr, ca := serveWebhooks(t, serverCtx, record(wh.CreateWebhook()), record(wh.DeleteWebhook()), spreadWH)
	installSpreadWebhooks(t, kube, addr, ca)

	scope, err := spreadscope.New(spreadscope.Config{Client: kube, Spreads: kf.Apps().V1alpha1().WorkloadSpreads()})
	require.NoError(t, err)
	kf.Start(tctx.Done())
	cf.Start(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	cf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- scope.Run(tctx, 1) }()
	t.Cleanup(func() { cancel(); <-done; kf.Shutdown(); cf.Shutdown() })

	zone := func(z string) *corev1.NodeSelectorTerm {
		return &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}
	}
	one := intstr.FromInt32(1)
	_, err = c.kruise.AppsV1alpha1().WorkloadSpreads(spreadNS).Create(ctx(t), &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: "ws"},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			Subsets: []appsv1alpha1.WorkloadSpreadSubset{
				{Name: "a", RequiredNodeSelectorTerm: zone("a"), MaxReplicas: &one},
				{Name: "b", RequiredNodeSelectorTerm: zone("b")},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "admitted by vworkloadspread.kb.io, which routed its target's pods first")
	_, err = c.kruise.AppsV1alpha1().WorkloadSpreads(spreadNS).Create(ctx(t), &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: "ws-too"},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			Subsets:         []appsv1alpha1.WorkloadSpreadSubset{{Name: "a"}},
		},
	}, metav1.CreateOptions{})
	requireInvalid(t, err, "WorkloadSpread ws targets it already")

	// Routed at admission: the pods are placed before the leader has written anything.
	pods := kube.CoreV1().Pods(spreadNS)
	first, err := pods.Create(ctx(t), ownedPod("web-aaaaa", "CloneSet", "web"), metav1.CreateOptions{})
	require.NoError(t, err)
	m, ok := spread.Matched(first)
	require.True(t, ok, "the targeted pod got its subset")
	assert.Equal(t, appsv1alpha1.InjectWorkloadSpread{Name: "ws", Subset: "a"}, *m)
	assert.Equal(t, []corev1.NodeSelectorTerm{*zone("a")}, first.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
	second, err := pods.Create(ctx(t), ownedPod("web-bbbbb", "CloneSet", "web"), metav1.CreateOptions{})
	require.NoError(t, err)
	m, _ = spread.Matched(second)
	assert.Equal(t, "b", m.Subset, "a is full (maxReplicas 1, its pod being created)")
	ws, err := c.kruise.AppsV1alpha1().WorkloadSpreads(spreadNS).Get(ctx(t), "ws", metav1.GetOptions{})
	require.NoError(t, err)
	a := ws.Status.VersionedSubsetStatuses[spread.VersionIgnored][0]
	assert.Equal(t, int32(0), a.MissingReplicas)
	assert.Contains(t, a.CreatingPods, "web-aaaaa")

	// A dry run is placed but not recorded.
	_, err = pods.Create(ctx(t), ownedPod("web-ccccc", "CloneSet", "web"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)

	other, err := pods.Create(ctx(t), ownedPod("other-aaaaa", "CloneSet", "other"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, ok = spread.Matched(other)
	assert.False(t, ok)

	waitFor(t, "the leader wrote the spreads' conditions", func(ctx context.Context) (bool, error) {
		for _, get := range []func() (metav1.Object, error){
			func() (metav1.Object, error) {
				return kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, spreadscope.DefaultMutatingConfiguration, metav1.GetOptions{})
			},
			func() (metav1.Object, error) {
				return kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, spreadscope.DefaultValidatingConfiguration, metav1.GetOptions{})
			},
		} {
			cfg, err := get()
			if err != nil {
				return false, err
			}
			if _, pending := cfg.GetAnnotations()[spreadscope.PendingAnnotation]; pending {
				return false, nil
			}
		}
		return true, nil
	})

	// What the controller writes once it sees the pods: their creation is no longer pending.
	ws, err = c.kruise.AppsV1alpha1().WorkloadSpreads(spreadNS).Get(ctx(t), "ws", metav1.GetOptions{})
	require.NoError(t, err)
	ws.Status.VersionedSubsetStatuses = map[string][]appsv1alpha1.WorkloadSpreadSubsetStatus{spread.VersionIgnored: {
		{Name: "a", Replicas: 1, MissingReplicas: 0}, {Name: "b", Replicas: 1, MissingReplicas: -1}}}
	_, err = c.kruise.AppsV1alpha1().WorkloadSpreads(spreadNS).UpdateStatus(ctx(t), ws, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The placed pod's delete is recorded; the other pod's delete is never sent.
	require.NoError(t, pods.Delete(ctx(t), "web-aaaaa", metav1.DeleteOptions{}))
	require.NoError(t, pods.Delete(ctx(t), "other-aaaaa", metav1.DeleteOptions{}))
	ws, err = c.kruise.AppsV1alpha1().WorkloadSpreads(spreadNS).Get(ctx(t), "ws", metav1.GetOptions{})
	require.NoError(t, err)
	a = ws.Status.VersionedSubsetStatuses[spread.VersionIgnored][0]
	assert.Contains(t, a.DeletingPods, "web-aaaaa")
	assert.Equal(t, int32(1), a.MissingReplicas, "the deleted pod's place is free for its replacement")

	sent := slices.Compact(seen.all())
	assert.Equal(t, []string{"CREATE ws-it/web-aaaaa", "CREATE ws-it/web-bbbbb", "CREATE ws-it/web-ccccc", "DELETE ws-it/web-aaaaa"}, sent,
		"only the targeted workload's pods were sent")

	// kruise is down: a pod of another workload is still created; a targeted one waits.
	stopServer()
	_, err = pods.Create(ctx(t), ownedPod("other-bbbbb", "CloneSet", "other"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = pods.Create(ctx(t), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = pods.Create(ctx(t), ownedPod("web-ddddd", "CloneSet", "web"), metav1.CreateOptions{})
	require.Error(t, err, "failurePolicy Fail: a targeted pod waits for kruise")
	assert.Contains(t, err.Error(), spreadscope.CreateWebhook)
	assert.Equal(t, sent, slices.Compact(seen.all()), "nothing more was sent")
}

func podName(req *admissionv1.AdmissionRequest) string {
	if req.Name != "" {
		return req.Name
	}
	return "?"
}

func ownedPod(name, kind, owner string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps.kruise.io/v1alpha1", Kind: kind, Name: owner, UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}},
	}
}

// installSpreadWebhooks creates WorkloadSpread's entries of deploy/base/webhook.yaml (gate on by
// default), pointed at addr.
func installSpreadWebhooks(t *testing.T, kube kubernetes.Interface, addr string, ca []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/base/webhook.yaml")
	require.NoError(t, err)
	url := func(path *string) *string { u := "https://" + addr + *path; return &u }
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	installed := 0
	for {
		var b json.RawMessage
		err := dec.Decode(&b)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var meta metav1.TypeMeta
		require.NoError(t, json.Unmarshal(b, &meta))
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var cfg admissionregistrationv1.MutatingWebhookConfiguration
			require.NoError(t, json.Unmarshal(b, &cfg))
			cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name != spreadscope.CreateWebhook })
			require.Len(t, cfg.Webhooks, 1)
			cfg.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: url(cfg.Webhooks[0].ClientConfig.Service.Path), CABundle: ca}
			_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
			require.NoError(t, err)
			installed++
		case "ValidatingWebhookConfiguration":
			var cfg admissionregistrationv1.ValidatingWebhookConfiguration
			require.NoError(t, json.Unmarshal(b, &cfg))
			cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
				return w.Name != spreadscope.DeleteWebhook && w.Name != spreadscope.EvictionWebhook && w.Name != "vworkloadspread.kb.io"
			})
			require.Len(t, cfg.Webhooks, 3)
			for i := range cfg.Webhooks {
				w := &cfg.Webhooks[i]
				w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: url(w.ClientConfig.Service.Path), CABundle: ca}
			}
			_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
			require.NoError(t, err)
			installed++
		}
	}
	require.Equal(t, 2, installed, "both configurations in deploy/base/webhook.yaml")
}

// The largest conditions spreadscope writes (just under MaxExpressionLength: Deployment targets,
// whose owner term matches a regular expression, and the other kinds) and the coarse fallback are
// accepted by the API server's CEL compiler and cost estimate.
func TestSpreadScopeLimitsInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	installSpreadWebhooks(t, kube, "127.0.0.1:1", nil)

	kinds := [][2]string{{"apps/v1", "Deployment"}, {"apps.kruise.io/v1alpha1", "CloneSet"}, {"apps/v1", "StatefulSet"}, {"example.com/v1", "Thing"}}
	var terms []spreadscope.Terms
	var namespaces []string
	var largest webhookscope.Scope
	for i := 0; ; i++ {
		k := kinds[i%len(kinds)]
		ns := fmt.Sprintf("team-%d", i)
		terms = append(terms, spreadscope.SpreadTerms(&appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
			Spec: appsv1alpha1.WorkloadSpreadSpec{TargetReference: &appsv1alpha1.TargetReference{APIVersion: k[0], Kind: k[1], Name: fmt.Sprintf("web-%d", i)}}}))
		namespaces = append(namespaces, ns)
		create, del, eviction, coarse := spreadscope.Expressions(terms, namespaces)
		if coarse {
			break
		}
		largest = webhookscope.Scope{spreadscope.CreateWebhook: create, spreadscope.DeleteWebhook: del, spreadscope.EvictionWebhook: eviction}
	}
	t.Logf("largest conditions: %d spreads, %d, %d and %d characters", len(terms)-1, len(largest[spreadscope.CreateWebhook]),
		len(largest[spreadscope.DeleteWebhook]), len(largest[spreadscope.EvictionWebhook]))
	ct, dt := spreadscope.Targets("", "")
	_, err = ct.Write(ctx(t), kube, webhookscope.Scope{spreadscope.CreateWebhook: "object.metadata.labels[("}, "", "")
	require.Error(t, err, "the API server checks the expressions it is given")
	_, err = ct.Write(ctx(t), kube, webhookscope.Scope{spreadscope.CreateWebhook: largest[spreadscope.CreateWebhook]}, "", "")
	assert.NoError(t, err, "largest create condition")
	_, err = dt.Write(ctx(t), kube, webhookscope.Scope{spreadscope.DeleteWebhook: largest[spreadscope.DeleteWebhook],
		spreadscope.EvictionWebhook: largest[spreadscope.EvictionWebhook]}, "", "")
	assert.NoError(t, err, "largest delete and eviction conditions")
	coarse := webhookscope.NamespacesExpression(namespaces)
	_, err = ct.Write(ctx(t), kube, webhookscope.Scope{spreadscope.CreateWebhook: coarse}, "", "")
	assert.NoError(t, err, "fallback")
	_, err = dt.Write(ctx(t), kube, webhookscope.Scope{spreadscope.DeleteWebhook: coarse, spreadscope.EvictionWebhook: coarse}, "", "")
	assert.NoError(t, err, "fallback")
}
