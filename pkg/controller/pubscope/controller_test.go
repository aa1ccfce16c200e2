package pubscope

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
)

// chartConfiguration is the validating configuration as the chart ships it (the two pod entries
// among others), with caBundles the certificate manager wrote.
func chartConfiguration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	entry := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:         name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("CA")},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "not-kube-system-or-kruise", Expression: "request.namespace != 'kube-system'"},
				{Name: ConditionName, Expression: NoneExpression},
			},
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultConfiguration},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "vcloneset.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("CA")}},
			entry(PodWebhook), entry(EvictionWebhook),
		},
	}
}

type fixture struct {
	kube     *kubefake.Clientset
	kruise   *kruisefake.Clientset
	ctrl     *Controller
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	ctx      context.Context
}

func newFixture(t *testing.T, kube []runtime.Object, budgets ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{kube: kubefake.NewClientset(kube...), kruise: kruisefake.NewSimpleClientset(budgets...),
		recorder: record.NewFakeRecorder(10), clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	kf := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	cf := informers.NewSharedInformerFactory(f.kube, 0)
	ctrl, err := New(Config{Client: f.kube, Budgets: kf.Policy().V1alpha1().PodUnavailableBudgets(), Pods: cf.Core().V1().Pods(),
		Recorder: f.recorder, Clock: f.clock})
	require.NoError(t, err)
	f.ctrl = ctrl
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); kf.Shutdown(); cf.Shutdown() })
	f.ctx = ctx
	kf.Start(ctx.Done())
	cf.Start(ctx.Done())
	go ctrl.scope.Informer().RunWithContext(ctx)
	kf.WaitForCacheSync(ctx.Done())
	cf.WaitForCacheSync(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), ctrl.scope.Informer().HasSynced)
	return f
}

// sync runs the controller once, after its configuration cache has caught up.
func (f *fixture) sync(t *testing.T) time.Duration {
	t.Helper()
	stored := f.stored(t)
	require.Eventually(t, func() bool {
		obj, ok, err := f.ctrl.scope.Informer().GetStore().GetByKey(DefaultConfiguration)
		c, _ := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		// The fake tracker keeps no resourceVersions: compare what sync reads.
		return err == nil && ok && equality.Semantic.DeepEqual(c.Annotations, stored.Annotations) && equality.Semantic.DeepEqual(c.Webhooks, stored.Webhooks)
	}, 5*time.Second, 10*time.Millisecond)
	next, err := f.ctrl.sync(f.ctx, key)
	require.NoError(t, err)
	return next
}

func (f *fixture) stored(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	cfg, err := f.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), DefaultConfiguration, metav1.GetOptions{})
	require.NoError(t, err)
	return cfg
}

func (f *fixture) scope(t *testing.T) scope {
	t.Helper()
	s, found := currentExpressions(f.stored(t))
	require.True(t, found)
	return s
}

func webPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: map[string]string{"app": "web"}}}
}

// The leader writes both entries' condition from the budgets and their pods, leaves the rest of
// the configuration alone, and writes "false" again when the last budget goes.
func TestSyncWritesTheBudgetsConditions(t *testing.T) {
	web := selectorBudget("team", "web", app("web"))
	f := newFixture(t, []runtime.Object{chartConfiguration(), webPod("web.bare")}, web)
	f.sync(t)
	got := f.scope(t)
	terms := BudgetTerms(web, []PodName{{Namespace: "team", Name: "web.bare", Labels: map[string]string{"app": "web"}}})
	assert.Equal(t, "oldObject != null && ("+terms.Pod+")", got.pod)
	assert.Equal(t, "("+terms.Eviction+")", got.eviction)
	cfg := f.stored(t)
	assert.Equal(t, "vcloneset.kb.io", cfg.Webhooks[0].Name)
	assert.Equal(t, []byte("CA"), cfg.Webhooks[1].ClientConfig.CABundle)
	assert.Equal(t, "not-kube-system-or-kruise", cfg.Webhooks[1].MatchConditions[0].Name, "the other condition is kept")
	assert.Contains(t, <-f.recorder.Events, ReasonScopeUpdated)

	f.kube.ClearActions()
	f.sync(t)
	for _, a := range f.kube.Actions() {
		assert.NotEqual(t, "patch", a.GetVerb(), "nothing to change, nothing written")
	}

	require.NoError(t, f.kruise.PolicyV1alpha1().PodUnavailableBudgets("team").Delete(context.Background(), "web", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		l, _ := f.ctrl.budgets.List(labelsEverything())
		return len(l) == 0
	}, 5*time.Second, 10*time.Millisecond)
	f.sync(t)
	assert.Equal(t, scope{pod: NoneExpression, eviction: NoneExpression}, f.scope(t))
}

// A budget admitted (pending) stays in the conditions until the cache has it, or for PendingTTL.
func TestSyncKeepsPendingBudgets(t *testing.T) {
	f := newFixture(t, []runtime.Object{chartConfiguration()})
	in := &Includer{Client: f.kube, Budgets: f.kruise.PolicyV1alpha1(), Clock: f.clock}
	db := targetBudget("team", "db", "apps/v1", "StatefulSet", "db")
	require.NoError(t, in.Include(context.Background(), db))
	terms := BudgetTerms(db, nil)
	assert.Equal(t, scope{pod: "oldObject != null && (" + terms.Pod + ")", eviction: "(" + terms.Eviction + ")"}, f.scope(t),
		"routed at admission, before it is stored")

	next := f.sync(t)
	assert.Equal(t, scope{pod: "oldObject != null && (" + terms.Pod + ")", eviction: "(" + terms.Eviction + ")"}, f.scope(t),
		"kept while the cache lacks it")
	assert.Equal(t, PendingTTL, next)

	f.clock.Step(PendingTTL)
	f.sync(t)
	assert.Equal(t, scope{pod: NoneExpression, eviction: NoneExpression}, f.scope(t), "never stored: dropped after PendingTTL")
	assert.NotContains(t, f.stored(t).Annotations, PendingAnnotation)
}

// Include adds to what is there, once, and leaves a configuration without the entries alone.
func TestInclude(t *testing.T) {
	f := newFixture(t, []runtime.Object{chartConfiguration()})
	in := &Includer{Client: f.kube, Budgets: f.kruise.PolicyV1alpha1(), Clock: f.clock}
	a, b := targetBudget("team", "a", "apps/v1", "StatefulSet", "a"), targetBudget("team", "b", "apps/v1", "StatefulSet", "b")
	require.NoError(t, in.Include(context.Background(), a))
	require.NoError(t, in.Include(context.Background(), b))
	require.NoError(t, in.Include(context.Background(), b))
	ta, tb := BudgetTerms(a, nil), BudgetTerms(b, nil)
	assert.Equal(t, "(oldObject != null && ("+ta.Pod+")) || (oldObject != null && "+tb.Pod+")", f.scope(t).pod)
	pend, err := parsePending(f.stored(t).Annotations)
	require.NoError(t, err)
	assert.Len(t, pend, 2)

	bare := newFixture(t, []runtime.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: DefaultConfiguration}}})
	require.NoError(t, (&Includer{Client: bare.kube, Budgets: bare.kruise.PolicyV1alpha1()}).Include(context.Background(), a))
	assert.Empty(t, bare.stored(t).Annotations)
}

func labelsEverything() labels.Selector { return labels.Everything() }

// An Include that would grow a condition past MaxExpressionLength writes the budgets' namespaces
// instead (coarser, still scoped).
func TestIncludeFallsBackToNamespaces(t *testing.T) {
	cfg := chartConfiguration()
	long := "oldObject != null && ((request.namespace == 'big' && " + strings.Repeat("true && ", MaxExpressionLength/8) + "true))"
	cfg.Webhooks[1].MatchConditions[1].Expression = long
	stored := selectorBudget("big", "stored", app("stored"))
	f := newFixture(t, []runtime.Object{cfg}, stored)
	in := &Includer{Client: f.kube, Budgets: f.kruise.PolicyV1alpha1(), Clock: f.clock}
	require.NoError(t, in.Include(context.Background(), selectorBudget("team", "web", app("web"))))
	want := "request.namespace in ['big', 'team']"
	assert.Equal(t, scope{pod: want, eviction: want}, f.scope(t))
}

// The leader falls back to the budgets' namespaces past MaxExpressionLength, with a Warning Event.
func TestSyncFallsBackToNamespaces(t *testing.T) {
	var budgets []runtime.Object
	for i := range 300 {
		budgets = append(budgets, selectorBudget(fmt.Sprintf("ns-%d", i%3), fmt.Sprint(i), app(fmt.Sprintf("application-%d", i))))
	}
	f := newFixture(t, []runtime.Object{chartConfiguration()}, budgets...)
	f.sync(t)
	want := "request.namespace in ['ns-0', 'ns-1', 'ns-2']"
	assert.Equal(t, scope{pod: want, eviction: want}, f.scope(t))
	event := <-f.recorder.Events
	assert.Contains(t, event, "Warning "+ReasonScopeCoarse)
}
