package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/pubscope"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
	"github.com/nodekruise/kruise/pkg/webhook/disruption"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
	"github.com/nodekruise/kruise/pkg/workload/podbudget"
)

const (
	pubAdmitNS = "pub-it"
	freeNS     = "pub-free"
)

// TestPodUnavailableBudgetWebhooksInAnAPIServer installs the PodUnavailableBudget entries as
// deploy/base renders them (plus the UPDATE rule the update gate adds), serves the disruption and
// budget webhooks with the real Admitter and runs the scope controller, then checks in a real API
// server that the scope's CEL is accepted, that a covered pod's delete, eviction and image update
// are judged (the second disruption refused with 429, naming the budget), that a pod no budget
// covers is never sent, and that with the webhook server stopped an uncovered pod is still
// deleted and evicted while a covered one is not.
func TestPodUnavailableBudgetWebhooksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	for _, ns := range []string{pubAdmitNS, freeNS} {
		_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, tctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(tctx)
	t.Cleanup(cancel)

	seen := &seenRequests{}
	budget := podbudget.NewAdmitter(podbudget.AdmitterConfig{Client: c.kruise})
	dis := (&disruption.Webhook{Budget: budget, Pods: disruption.LivePods{Client: kube.CoreV1()}, Delete: true, Update: true,
		KruiseNamespace: "kruise-system"}).Webhook()
	inner := dis.Admitter
	dis.Admitter = server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
		seen.add(string(req.Operation) + " " + req.Namespace + "/" + req.Name)
		return inner.Admit(ctx, req)
	})
	budgetWH := validate.PodUnavailableBudgetWebhook(c.kruise.PolicyV1alpha1(), true,
		&pubscope.Includer{Client: kube, Budgets: c.kruise.PolicyV1alpha1()})
	serverCtx, stopServer := context.WithCancel(tctx)
	addr, ca := serveWebhooks(t, serverCtx, dis, budgetWH)
	installPUBWebhooks(t, kube, addr, ca)

	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	cf := informers.NewSharedInformerFactory(kube, 0)
	scope, err := pubscope.New(pubscope.Config{Client: kube, Budgets: kf.Policy().V1alpha1().PodUnavailableBudgets(), Pods: cf.Core().V1().Pods()})
	require.NoError(t, err)
	kf.Start(tctx.Done())
	cf.Start(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	cf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- scope.Run(tctx, 1) }()
	t.Cleanup(func() { cancel(); <-done; kf.Shutdown(); cf.Shutdown() })

	for ns, names := range map[string][]string{pubAdmitNS: {"web-0", "web-1", "other"}, freeNS: {"free"}} {
		for _, name := range names {
			app := "web"
			if name == "other" {
				app = "other"
			}
			runningPod(t, kube, ns, name, app)
		}
	}
	one := intstr.FromInt32(1)
	_, err = c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubAdmitNS).Create(ctx(t), &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE,EVICT,UPDATE"}},
		Spec:       policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &one},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "admitted by vpodunavailablebudget.kb.io, which routed its pods first")
	_, err = c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubAdmitNS).Create(ctx(t), &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-too"},
		Spec:       policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &one},
	}, metav1.CreateOptions{})
	requireInvalid(t, err, "overlaps the selector of PodUnavailableBudget web")
	// What the budget controller (pubcore) would count: 2 of 2 available, 1 may go.
	pub, err := c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubAdmitNS).Get(ctx(t), "web", metav1.GetOptions{})
	require.NoError(t, err)
	pub.Status = policyv1alpha1.PodUnavailableBudgetStatus{ObservedGeneration: pub.Generation, TotalReplicas: 2, DesiredAvailable: 1, CurrentAvailable: 2, UnavailableAllowed: 1}
	_, err = c.kruise.PolicyV1alpha1().PodUnavailableBudgets(pubAdmitNS).UpdateStatus(ctx(t), pub, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, "the leader wrote the budget's conditions", func(ctx context.Context) (bool, error) {
		cfg, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, pubscope.DefaultConfiguration, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, pending := cfg.Annotations[pubscope.PendingAnnotation]
		return !pending, nil
	})

	pods := kube.CoreV1().Pods(pubAdmitNS)
	// A label change of a covered pod is never sent (disruptive-update).
	relabel(t, kube, pubAdmitNS, "web-1", "tier", "fe")
	require.NoError(t, pods.Delete(ctx(t), "web-0", metav1.DeleteOptions{}), "the budget allows one")
	err = pods.Delete(ctx(t), "web-1", metav1.DeleteOptions{})
	requireTooManyRequests(t, err, "PodUnavailableBudget pub-it/web: no more unavailable pods allowed")
	err = pods.EvictV1(ctx(t), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: pubAdmitNS}})
	requireTooManyRequests(t, err, "PodUnavailableBudget pub-it/web")
	web1, err := pods.Get(ctx(t), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	web1.Spec.Containers[0].Image = "nginx:2"
	_, err = pods.Update(ctx(t), web1, metav1.UpdateOptions{})
	requireTooManyRequests(t, err, "UPDATE")
	require.NoError(t, pods.EvictV1(ctx(t), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: pubAdmitNS}}))
	// The API server may run a DELETE's admission twice (its validation is repeated on a retried
	// storage write); the second finds the pod charged already.
	sent := slices.Compact(seen.all())
	assert.Equal(t, []string{"DELETE pub-it/web-0", "DELETE pub-it/web-1", "CREATE pub-it/web-1", "UPDATE pub-it/web-1"}, sent,
		"only the covered pod's disruptions were sent: not its label change, not the other pod's eviction")

	// kruise is down: a pod no budget covers is still deleted and evicted; a covered one is not.
	stopServer()
	runningPod(t, kube, pubAdmitNS, "other-2", "other")
	require.NoError(t, pods.Delete(ctx(t), "other-2", metav1.DeleteOptions{}))
	require.NoError(t, kube.CoreV1().Pods(freeNS).EvictV1(ctx(t), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "free", Namespace: freeNS}}),
		"a namespace without a budget")
	err = pods.Delete(ctx(t), "web-1", metav1.DeleteOptions{})
	require.Error(t, err, "failurePolicy Fail: a covered pod is not deleted while kruise is unreachable")
	assert.Contains(t, err.Error(), "vpod.kb.io")
	assert.Equal(t, sent, slices.Compact(seen.all()), "nothing more was sent")
}

// seenRequests records the requests the disruption webhook was sent.
type seenRequests struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seenRequests) add(r string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

func (s *seenRequests) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// runningPod creates a pod labelled app and reports it Running and Ready (there is no kubelet).
func runningPod(t *testing.T, kube kubernetes.Interface, ns, name, app string) {
	t.Helper()
	p, err := kube.CoreV1().Pods(ns).Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx(t), p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func relabel(t *testing.T, kube kubernetes.Interface, ns, name, key, value string) {
	t.Helper()
	p, err := kube.CoreV1().Pods(ns).Get(ctx(t), name, metav1.GetOptions{})
	require.NoError(t, err)
	p.Labels[key] = value
	_, err = kube.CoreV1().Pods(ns).Update(ctx(t), p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func requireTooManyRequests(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsTooManyRequests(err), "expected 429 (what kubectl drain retries), got %v", err)
	require.Contains(t, err.Error(), want)
}

// installPUBWebhooks creates the ValidatingWebhookConfiguration of deploy/base/webhook.yaml with
// only its PodUnavailableBudget entries, calling the server at addr, and vpod.kb.io sent updates
// too (PodUnavailableBudgetUpdateGate, as deploy/overlays/local).
func installPUBWebhooks(t *testing.T, kube kubernetes.Interface, addr string, ca []byte) {
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
		cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
			return w.Name != pubscope.PodWebhook && w.Name != pubscope.EvictionWebhook && w.Name != "vpodunavailablebudget.kb.io"
		})
		require.Len(t, cfg.Webhooks, 3)
		for i := range cfg.Webhooks {
			w := &cfg.Webhooks[i]
			url := "https://" + addr + *w.ClientConfig.Service.Path
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
			if w.Name == pubscope.PodWebhook {
				require.Len(t, w.Rules, 1, "deploy/base: the update gate is off")
				update := *w.Rules[0].DeepCopy()
				update.Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
				update.Resources = []string{"pods", "pods/resize"}
				w.Rules = append(w.Rules, update)
			}
		}
		_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
		require.NoError(t, err)
		return
	}
	t.Fatal("no ValidatingWebhookConfiguration in deploy/base/webhook.yaml")
}

// The largest conditions pubscope writes (just under MaxExpressionLength: selector budgets with
// every operator and the name patterns of their pods, targetRef budgets with owner references and
// regular expressions) and the coarse fallback are accepted by the API server's CEL compiler and
// cost estimate, and the API server refuses an expression that does not compile.
func TestPUBScopeLimitsInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	installPUBWebhooks(t, kube, "127.0.0.1:1", nil)

	one := intstr.FromInt32(1)
	var terms []pubscope.Terms
	var namespaces []string
	var largest [2]string
	for i := 0; ; i++ {
		ns := fmt.Sprintf("team-%d", i)
		b := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}, Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
					{Key: "track", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"canary"}},
					{Key: "owner", Operator: metav1.LabelSelectorOpExists},
					{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist},
				},
			},
			MaxUnavailable: &one,
		}}
		pods := []pubscope.PodName{
			{Namespace: ns, Name: fmt.Sprintf("app-%d-7d9f8-x2x4z", i), GenerateName: fmt.Sprintf("app-%d-7d9f8-", i), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i), "tier": "a", "owner": "x"}},
			{Namespace: ns, Name: fmt.Sprintf("db-%d-0", i), Owner: fmt.Sprintf("db-%d", i), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i), "tier": "b", "owner": "x"}},
		}
		terms = append(terms, pubscope.BudgetTerms(b, pods))
		kinds := [][2]string{{"apps/v1", "Deployment"}, {"apps.kruise.io/v1alpha1", "CloneSet"}, {"apps/v1", "StatefulSet"}}
		k := kinds[i%len(kinds)]
		target := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}, Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: k[0], Kind: k[1], Name: fmt.Sprintf("web-%d", i)}, MaxUnavailable: &one}}
		terms = append(terms, pubscope.BudgetTerms(target, nil))
		namespaces = append(namespaces, ns)
		pod, eviction, coarse := pubscope.Expressions(terms, namespaces)
		if coarse {
			break
		}
		largest = [2]string{pod, eviction}
	}
	t.Logf("largest conditions: %d budgets, %d and %d characters", len(terms)-2, len(largest[0]), len(largest[1]))
	write := func(webhook, expression string) error {
		patch := fmt.Sprintf(`{"webhooks":[{"name":%q,"matchConditions":[{"name":%q,"expression":%q}]}]}`, webhook, pubscope.ConditionName, expression)
		_, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx(t), pubscope.DefaultConfiguration,
			types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	require.Error(t, write(pubscope.PodWebhook, "oldObject.metadata.labels[("), "the API server checks the expressions it is given")
	assert.NoError(t, write(pubscope.PodWebhook, largest[0]), "largest pod condition")
	assert.NoError(t, write(pubscope.EvictionWebhook, largest[1]), "largest eviction condition")
	coarse := webhookscope.NamespacesExpression(namespaces)
	assert.NoError(t, write(pubscope.PodWebhook, coarse), "fallback")
	assert.NoError(t, write(pubscope.EvictionWebhook, coarse), "fallback")
}
