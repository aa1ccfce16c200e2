package sidecarsetscope

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
)

// chartConfiguration is the configuration as the chart ships it, with a caBundle the certificate
// manager wrote and the launch-priority entry after the injection one.
func chartConfiguration() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultConfiguration},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{
				Name:         DefaultWebhook,
				ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("CA")},
				MatchConditions: []admissionregistrationv1.MatchCondition{
					{Name: "not-kube-system-or-kruise", Expression: "request.namespace != 'kube-system' && request.namespace != 'kruise-system'"},
					{Name: ConditionName, Expression: NoneExpression},
				},
			},
			{
				Name:            "mpod.kb.io",
				ClientConfig:    admissionregistrationv1.WebhookClientConfig{CABundle: []byte("CA")},
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "launch-priority-marked", Expression: "true"}},
			},
		},
	}
}

type fixture struct {
	kube     *kubefake.Clientset
	kruise   *kruisefake.Clientset
	ctrl     *Controller
	recorder *record.FakeRecorder
	sync     func() []string
}

func newFixture(t *testing.T, kube []runtime.Object, sets ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{kube: kubefake.NewClientset(kube...), kruise: kruisefake.NewSimpleClientset(sets...), recorder: record.NewFakeRecorder(10)}
	sf := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	ctrl, err := New(Config{
		Client: f.kube, SidecarSets: sf.Apps().V1beta1().SidecarSets(), Recorder: f.recorder,
	})
	require.NoError(t, err)
	f.ctrl = ctrl
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); sf.Shutdown() })
	sf.Start(ctx.Done())
	go ctrl.scope.Informer().RunWithContext(ctx)
	sf.WaitForCacheSync(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), ctrl.scope.Informer().HasSynced)
	// sync runs the controller once and returns the Events it recorded.
	f.sync = func() []string {
		_, err := ctrl.sync(ctx, key)
		require.NoError(t, err)
		var out []string
		for {
			select {
			case e := <-f.recorder.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	return f
}

func (f *fixture) stored(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	cfg, err := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), DefaultConfiguration, metav1.GetOptions{})
	require.NoError(t, err)
	return cfg
}

func TestSyncWritesOnlyItsCondition(t *testing.T) {
	web := ss("web", matchLabels("app", "web"))
	f := newFixture(t, []runtime.Object{chartConfiguration()}, web)
	events := f.sync()

	cfg := f.stored(t)
	want := Expression([]*appsv1beta1.SidecarSet{web})
	require.Len(t, cfg.Webhooks, 2)
	assert.Equal(t, []admissionregistrationv1.MatchCondition{
		{Name: "not-kube-system-or-kruise", Expression: "request.namespace != 'kube-system' && request.namespace != 'kruise-system'"},
		{Name: ConditionName, Expression: want},
	}, cfg.Webhooks[0].MatchConditions)
	assert.Equal(t, []byte("CA"), cfg.Webhooks[0].ClientConfig.CABundle, "the caBundle is kept")
	assert.Equal(t, chartConfiguration().Webhooks[1], cfg.Webhooks[1], "the other entry is untouched")
	require.Len(t, events, 1)
	assert.Contains(t, events[0], ReasonScopeUpdated)

	// Once written, a sync with the same SidecarSets writes nothing.
	require.Eventually(t, func() bool {
		got, err := f.ctrl.configs.Get(DefaultConfiguration)
		return err == nil && got.Webhooks[0].MatchConditions[1].Expression == want
	}, 5*time.Second, 10*time.Millisecond)
	f.kube.ClearActions()
	assert.Empty(t, f.sync())
	for _, a := range f.kube.Actions() {
		assert.NotEqual(t, "patch", a.GetVerb(), "patched though nothing changed")
	}
}

func TestSyncFollowsSidecarSets(t *testing.T) {
	f := newFixture(t, []runtime.Object{chartConfiguration()})
	f.sync()
	assert.Equal(t, NoneExpression, f.stored(t).Webhooks[0].MatchConditions[1].Expression, "no SidecarSet: never called")

	_, err := f.kruise.AppsV1beta1().SidecarSets().Create(context.Background(), ss("db", matchLabels("app", "db")), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { l, _ := f.ctrl.sidecarSets.List(labelsEverything()); return len(l) == 1 }, 5*time.Second, 10*time.Millisecond)
	f.sync()
	assert.Contains(t, f.stored(t).Webhooks[0].MatchConditions[1].Expression, "object.metadata.labels['app'] == 'db'")
}

func TestSyncWithoutTheEntry(t *testing.T) {
	cfg := chartConfiguration()
	cfg.Webhooks = cfg.Webhooks[1:]
	f := newFixture(t, []runtime.Object{cfg}, ss("web", matchLabels("app", "web")))
	assert.Empty(t, f.sync())
	assert.Len(t, f.stored(t).Webhooks, 1, "an entry is never added")

	none := newFixture(t, nil, ss("web", matchLabels("app", "web")))
	assert.Empty(t, none.sync(), "no configuration (webhooks off): nothing to do")
}

func TestEventsQueueTheKey(t *testing.T) {
	f := newFixture(t, []runtime.Object{chartConfiguration()})
	require.Eventually(t, func() bool { return f.ctrl.scope.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the configuration's add queued the key")
	other := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"}}
	_, err := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), other, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, cache.WaitForCacheSync(context.Background().Done(), func() bool { _, err := f.ctrl.configs.Get("someone-else"); return err == nil }))
	assert.Equal(t, 1, f.ctrl.scope.Len(), "one key however many events")
}

func labelsEverything() labels.Selector { return labels.Everything() }

// Run keeps the condition without being asked: a Helm upgrade putting the chart's condition back
// is undone.
func TestRunRestoresTheCondition(t *testing.T) {
	kube := kubefake.NewClientset(chartConfiguration())
	kruise := kruisefake.NewSimpleClientset(ss("web", matchLabels("app", "web")))
	sf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	ctrl, err := New(Config{Client: kube, SidecarSets: sf.Apps().V1beta1().SidecarSets(), Recorder: record.NewFakeRecorder(10)})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	t.Cleanup(func() { cancel(); <-done; sf.Shutdown() })
	sf.Start(ctx.Done())
	sf.WaitForCacheSync(ctx.Done())
	go func() { done <- ctrl.Run(ctx, 1) }()

	configs := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	condition := func() string {
		cfg, err := configs.Get(ctx, DefaultConfiguration, metav1.GetOptions{})
		require.NoError(t, err)
		return cfg.Webhooks[0].MatchConditions[1].Expression
	}
	require.Eventually(t, func() bool { return condition() != NoneExpression }, 5*time.Second, 10*time.Millisecond)
	_, err = configs.Update(ctx, chartConfiguration(), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return condition() != NoneExpression }, 5*time.Second, 10*time.Millisecond,
		"the chart's condition is replaced again")
}
