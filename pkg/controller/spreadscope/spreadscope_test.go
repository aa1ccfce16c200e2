package spreadscope

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
)

func ws(ns, name, apiVersion, kind, target string) *appsv1alpha1.WorkloadSpread {
	return &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1alpha1.WorkloadSpreadSpec{TargetReference: &appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: target}}}
}

func TestSpreadTerms(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		ws                      *appsv1alpha1.WorkloadSpread
		create, delete, evicted string
	}{
		{name: "CloneSet", ws: ws("team", "s", "apps.kruise.io/v1alpha1", "CloneSet", "web"),
			create:  "(request.namespace == 'team' && has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion.startsWith('apps.kruise.io/') && r.kind == 'CloneSet' && r.name == 'web'))",
			delete:  "(request.namespace == 'team' && has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion.startsWith('apps.kruise.io/') && r.kind == 'CloneSet' && r.name == 'web'))",
			evicted: "(request.namespace == 'team' && request.name.matches('^web-[a-z0-9]{5}$'))"},
		{name: "Deployment: its ReplicaSets", ws: ws("team", "s", "apps/v1", "Deployment", "web.x"),
			create:  "(request.namespace == 'team' && has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion.startsWith('apps/') && r.kind == 'ReplicaSet' && r.name.matches('^web\\\\.x-[a-z0-9]+$')))",
			evicted: "(request.namespace == 'team' && request.name.matches('^web\\\\.x-[a-z0-9]+-[a-z0-9]{5}$'))"},
		{name: "StatefulSet ordinals", ws: ws("team", "s", "apps/v1", "StatefulSet", "db"),
			evicted: "(request.namespace == 'team' && request.name.matches('^db-[0-9]+$'))"},
		{name: "any kind, a long name: evictions by namespace", ws: ws("team", "s", "example.com/v1", "Thing", strings.Repeat("x", 60)),
			evicted: "(request.namespace == 'team')"},
		{name: "core group", ws: ws("team", "s", "v1", "ReplicationController", "rc"),
			create:  "(request.namespace == 'team' && has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion == 'v1' && r.kind == 'ReplicationController' && r.name == 'rc'))",
			evicted: "(request.namespace == 'team' && request.name.matches('^rc-[a-z0-9]{5}$'))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SpreadTerms(tc.ws)
			if tc.create != "" {
				assert.Equal(t, tc.create, got.Create)
			}
			if tc.delete != "" {
				assert.Equal(t, tc.delete, got.Delete)
			}
			assert.Equal(t, tc.evicted, got.Eviction)
		})
	}
	none := ws("team", "s", "apps/v1", "Deployment", "web")
	none.Spec.TargetReference = nil
	assert.Equal(t, Terms{}, SpreadTerms(none))
	gone := ws("team", "s", "apps/v1", "Deployment", "web")
	gone.DeletionTimestamp = &metav1.Time{}
	assert.Equal(t, Terms{}, SpreadTerms(gone))
}

func TestExpressions(t *testing.T) {
	c, d, e, coarse := Expressions(nil, nil)
	assert.Equal(t, []string{NoneExpression, NoneExpression, NoneExpression}, []string{c, d, e})
	assert.False(t, coarse)

	a, b := SpreadTerms(ws("x", "a", "apps/v1", "StatefulSet", "a")), SpreadTerms(ws("x", "b", "apps/v1", "StatefulSet", "b"))
	c1, d1, e1, _ := Expressions([]Terms{a, b, a}, nil)
	c2, d2, e2, _ := Expressions([]Terms{b, a}, nil)
	assert.Equal(t, []string{c1, d1, e1}, []string{c2, d2, e2}, "same spreads, same text")
	assert.Equal(t, CreateGuard+"("+a.Create+" || "+b.Create+")", c1)
	assert.True(t, strings.HasPrefix(d1, "oldObject != null && has(oldObject.metadata.annotations) && 'apps.kruise.io/matched-workloadspread' in oldObject.metadata.annotations && ("))

	var many []Terms
	var namespaces []string
	for i := range 400 {
		many = append(many, SpreadTerms(ws(fmt.Sprintf("ns-%d", i%2), "s", "apps/v1", "StatefulSet", fmt.Sprintf("workload-%d", i))))
		namespaces = append(namespaces, fmt.Sprintf("ns-%d", i%2))
	}
	c, d, e, coarse = Expressions(many, namespaces)
	assert.True(t, coarse)
	assert.Equal(t, "request.namespace in ['ns-0', 'ns-1']", c)
	assert.Equal(t, c, d)
	assert.Equal(t, c, e)
}

func configurations() []runtime.Object {
	cond := []admissionregistrationv1.MatchCondition{{Name: "not-kube-system-or-kruise", Expression: "true"}, {Name: ConditionName, Expression: NoneExpression}}
	return []runtime.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: DefaultMutatingConfiguration},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mpod.kb.io"}, {Name: CreateWebhook, MatchConditions: cond}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: DefaultValidatingConfiguration},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: DeleteWebhook, MatchConditions: cond}, {Name: EvictionWebhook, MatchConditions: cond}}},
	}
}

func scopes(t *testing.T, kube *kubefake.Clientset) (webhookscope.State, webhookscope.State) {
	t.Helper()
	ct, dt := Targets("", "")
	var out []webhookscope.State
	for _, tg := range []webhookscope.Target{ct, dt} {
		obj, err := tg.Get(context.Background(), kube)
		require.NoError(t, err)
		s, ok := tg.Read(obj)
		require.True(t, ok)
		out = append(out, s)
	}
	return out[0], out[1]
}

func TestSyncAndInclude(t *testing.T) {
	kube := kubefake.NewClientset(configurations()...)
	stored := ws("team", "stored", "apps.kruise.io/v1alpha1", "CloneSet", "web")
	kruise := kruisefake.NewSimpleClientset(stored)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	c, err := New(Config{Client: kube, Spreads: kf.Apps().V1alpha1().WorkloadSpreads(), Recorder: record.NewFakeRecorder(10), Clock: clk})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); kf.Shutdown() })
	kf.Start(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	for _, s := range []*webhookscope.Controller{c.create, c.delete} {
		go s.Informer().RunWithContext(ctx)
		require.True(t, cache.WaitForCacheSync(ctx.Done(), s.Informer().HasSynced))
	}
	sync := func() {
		for _, s := range []*webhookscope.Controller{c.create, c.delete} {
			_, err := s.Sync(ctx, "scope")
			require.NoError(t, err)
		}
	}
	sync()
	cs, ds := scopes(t, kube)
	st := SpreadTerms(stored)
	assert.Equal(t, CreateGuard+"("+st.Create+")", cs.Scope[CreateWebhook])
	assert.Equal(t, DeleteGuard+"("+st.Delete+")", ds.Scope[DeleteWebhook])
	assert.Equal(t, "("+st.Eviction+")", ds.Scope[EvictionWebhook])

	// A spread being admitted is routed on both configurations before it is stored, and kept
	// by the leader while its cache lacks it, for PendingTTL.
	in := &Includer{Client: kube, Spreads: kruise.AppsV1alpha1(), Clock: clk}
	fresh := ws("team", "fresh", "apps/v1", "Deployment", "api")
	require.NoError(t, in.Include(ctx, fresh))
	ft := SpreadTerms(fresh)
	cs, ds = scopes(t, kube)
	assert.Contains(t, cs.Scope[CreateWebhook], ft.Create)
	assert.Contains(t, ds.Scope[DeleteWebhook], ft.Delete)
	assert.Contains(t, ds.Scope[EvictionWebhook], ft.Eviction)
	assert.Contains(t, cs.Pending, "team/fresh")
	require.Eventually(t, func() bool {
		obj, _, _ := c.create.Informer().GetStore().GetByKey(DefaultMutatingConfiguration)
		ct, _ := Targets("", "")
		got, _ := ct.Read(obj.(runtime.Object))
		return got.Pending != ""
	}, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		obj, _, _ := c.delete.Informer().GetStore().GetByKey(DefaultValidatingConfiguration)
		_, dt := Targets("", "")
		got, _ := dt.Read(obj.(runtime.Object))
		return got.Pending != ""
	}, 5*time.Second, 10*time.Millisecond)
	sync()
	cs, _ = scopes(t, kube)
	create, _, _, _ := Expressions([]Terms{st, ft}, nil)
	assert.Equal(t, create, cs.Scope[CreateWebhook], "kept while pending")

	clk.Step(PendingTTL)
	require.Eventually(t, func() bool {
		obj, _, _ := c.create.Informer().GetStore().GetByKey(DefaultMutatingConfiguration)
		ct, _ := Targets("", "")
		got, _ := ct.Read(obj.(runtime.Object))
		return got.Scope[CreateWebhook] == create
	}, 5*time.Second, 10*time.Millisecond)
	sync()
	cs, ds = scopes(t, kube)
	assert.Equal(t, CreateGuard+"("+st.Create+")", cs.Scope[CreateWebhook], "never stored: dropped after PendingTTL")
	assert.Empty(t, cs.Pending)
	assert.Empty(t, ds.Pending)

	// Without the entries (gate off) nothing is written.
	bare := kubefake.NewClientset()
	require.NoError(t, (&Includer{Client: bare, Spreads: kruise.AppsV1alpha1()}).Include(ctx, fresh))
}
