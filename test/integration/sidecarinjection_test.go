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
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/sidecarsetscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/sidecarinjection"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

const injectionNS = "sidecar-injection-it"

// TestSidecarInjectionInAnAPIServer installs msidecarset.kb.io as deploy/base renders
// it, runs the injection webhook and the scope controller, and checks in a real API server that
// the controller's CEL condition compiles and is accepted, that a pod a SidecarSet selects is
// injected, and that a pod none selects never reaches the webhook.
func TestSidecarInjectionInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: injectionNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, tctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(tctx)
	t.Cleanup(cancel)

	seen := &seenPods{}
	addr, ca := serveInjection(t, tctx, kube, c, seen)
	installInjectionWebhook(t, kube, addr, ca)

	sf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	scope, err := sidecarsetscope.New(sidecarsetscope.Config{Client: kube, SidecarSets: sf.Apps().V1beta1().SidecarSets()})
	require.NoError(t, err)
	sf.Start(tctx.Done())
	sf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- scope.Run(tctx, 1) }()
	t.Cleanup(func() { cancel(); <-done; sf.Shutdown() })

	_, err = c.kruise.AppsV1beta1().SidecarSets().Create(ctx(t), &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "log"},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"batch"}}},
			},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: injectionNS}},
			Containers:        []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "log-agent", Image: "busybox"}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, "the scope controller wrote the SidecarSet's condition", func(ctx context.Context) (bool, error) {
		cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "kruise-mutating-webhook-configuration", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, mc := range cfg.Webhooks[0].MatchConditions {
			if mc.Name == sidecarsetscope.ConditionName {
				return mc.Expression != sidecarsetscope.NoneExpression, nil
			}
		}
		return false, nil
	})

	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: injectionNS, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		}
	}
	var web *corev1.Pod
	// The injection caches may see the SidecarSet a moment after the condition is written.
	waitFor(t, "a selected pod created with its sidecar", func(ctx context.Context) (bool, error) {
		p := pod("", map[string]string{"app": "web"})
		p.GenerateName = "web-"
		p, err := kube.CoreV1().Pods(injectionNS).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		web = p
		return len(p.Spec.Containers) == 2, nil
	})
	assert.Equal(t, "log-agent", web.Spec.Containers[0].Name)
	assert.Equal(t, "log", web.Annotations[sidecarrules.InjectedListAnnotation])

	for name, labels := range map[string]map[string]string{
		"db": {"app": "db"}, "batch": {"app": "web", "tier": "batch"}, "bare": nil,
	} {
		p, err := kube.CoreV1().Pods(injectionNS).Create(ctx(t), pod(name, labels), metav1.CreateOptions{})
		require.NoError(t, err, name)
		assert.Len(t, p.Spec.Containers, 1, name)
	}
	assert.Contains(t, seen.names(), "web-", "the selected pod was sent")
	assert.NotContains(t, seen.names(), "db", "a pod no SidecarSet selects is never sent")
	assert.NotContains(t, seen.names(), "batch", "NotIn is in the condition")
	assert.NotContains(t, seen.names(), "bare")

	_, err = kube.CoreV1().Pods("default").Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "other-ns", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotContains(t, seen.names(), "other-ns", "a namespace named by the SidecarSet's namespaceSelector is in the condition")
}

// seenPods records the names of the pods the webhook was asked about.
type seenPods struct {
	mu  sync.Mutex
	all []string
}

func (s *seenPods) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, name)
}

func (s *seenPods) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.all...)
}

// serveInjection serves the injection webhook on loopback over TLS, reading from caches that it
// starts and waits for, and returns the server's address and its CA.
func serveInjection(t *testing.T, tctx context.Context, kube kubernetes.Interface, c *cluster, seen *seenPods) (string, []byte) {
	t.Helper()
	caches := sidecarinjection.NewCaches(kube, c.kruise, "kruise-system", sidecarsetscope.DefaultConfiguration, nil)
	caches.Start(tctx)
	t.Cleanup(caches.Shutdown)
	waitFor(t, "the injection caches synced", func(ctx context.Context) (bool, error) { return caches.WaitSynced(ctx) == nil, nil })
	wh := caches.Injector().Webhook()
	inner := wh.Admitter
	wh.Admitter = server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
		p := &corev1.Pod{}
		_ = json.Unmarshal(req.Object.Raw, p)
		seen.add(p.Name + p.GenerateName)
		return inner.Admit(ctx, req)
	})
	return serveWebhooks(t, tctx, wh)
}

// installInjectionWebhook creates the MutatingWebhookConfiguration of
// deploy/base/webhook.yaml with only its injection entry, calling the server at addr.
func installInjectionWebhook(t *testing.T, kube kubernetes.Interface, addr string, ca []byte) {
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
		cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name != sidecarsetscope.DefaultWebhook })
		require.Len(t, cfg.Webhooks, 1)
		w := &cfg.Webhooks[0]
		url := "https://" + addr + *w.ClientConfig.Service.Path
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
		_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
		require.NoError(t, err)
		return
	}
	t.Fatal("no MutatingWebhookConfiguration in deploy/base/webhook.yaml")
}

// The largest condition the scope controller writes (just under MaxExpressionLength, selectors
// of every operator and a namespace each) and its fallback are accepted by the API server's CEL compiler and cost
// estimate.
func TestSidecarSetScopeLimitsInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	installInjectionWebhook(t, kube, "127.0.0.1:1", nil)

	var sets []*appsv1beta1.SidecarSet
	var largest string
	for i := 0; ; i++ {
		sets = append(sets, &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)},
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b", "c"}},
						{Key: "track", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"canary"}},
						{Key: "owner", Operator: metav1.LabelSelectorOpExists},
						{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist},
					},
				},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: fmt.Sprintf("team-%d", i)}},
			},
		})
		e := sidecarsetscope.Expression(sets)
		if e == sidecarsetscope.AnyLabelExpression {
			break
		}
		largest = e
	}
	t.Logf("largest condition: %d SidecarSets, %d characters", len(sets)-1, len(largest))
	write := func(expression string) error {
		patch := fmt.Sprintf(`{"webhooks":[{"name":%q,"matchConditions":[{"name":%q,"expression":%q}]}]}`,
			sidecarsetscope.DefaultWebhook, sidecarsetscope.ConditionName, expression)
		_, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx(t), "kruise-mutating-webhook-configuration",
			types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	require.Error(t, write("object.metadata.labels[("), "the API server checks the expressions it is given")
	for name, expression := range map[string]string{"largest": largest, "fallback": sidecarsetscope.AnyLabelExpression} {
		assert.NoError(t, write(expression), name)
	}
}
