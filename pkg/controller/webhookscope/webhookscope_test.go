package webhookscope

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var target = Target{Kind: Validating, Configuration: "cfg", Entries: []string{"a.kb.io", "b.kb.io"}, Condition: "covered", PendingAnnotation: "example.io/pending"}

func configuration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	entry := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("CA")},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "other", Expression: "true"}, {Name: "covered", Expression: "false"}}}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "first.kb.io"}, entry("a.kb.io"), entry("b.kb.io")},
	}
}

func TestReadAndWrite(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(configuration())
	obj, err := target.Get(ctx, kube)
	require.NoError(t, err)
	s, found := target.Read(obj)
	require.True(t, found)
	assert.Equal(t, Scope{"a.kb.io": "false", "b.kb.io": "false"}, s.Scope)
	assert.Empty(t, s.Pending)

	_, found = Target{Kind: Mutating, Configuration: "cfg", Entries: target.Entries}.Read(obj)
	assert.False(t, found, "another kind")
	_, found = Target{Kind: Validating, Configuration: "cfg", Entries: []string{"a.kb.io", "missing.kb.io"}}.Read(obj)
	assert.False(t, found, "an entry missing")

	_, err = target.Write(ctx, kube, Scope{"a.kb.io": "x", "b.kb.io": "y"}, `{"k":1}`, "")
	require.NoError(t, err)
	cfg, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "cfg", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "first.kb.io", cfg.Webhooks[0].Name)
	assert.Equal(t, []admissionregistrationv1.MatchCondition{{Name: "other", Expression: "true"}, {Name: "covered", Expression: "x"}}, cfg.Webhooks[1].MatchConditions)
	assert.Equal(t, "y", cfg.Webhooks[2].MatchConditions[1].Expression)
	assert.Equal(t, []byte("CA"), cfg.Webhooks[2].ClientConfig.CABundle)
	assert.Equal(t, `{"k":1}`, cfg.Annotations["example.io/pending"])

	_, err = target.Write(ctx, kube, Scope{"a.kb.io": "x", "b.kb.io": "y"}, "", "")
	require.NoError(t, err)
	cfg, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "cfg", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cfg.Annotations, "example.io/pending", "an empty pending value removes the annotation")
}

type entry struct {
	Since metav1.Time `json:"since"`
}

func TestPending(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := map[string]entry{"old": {Since: metav1.NewTime(now.Add(-time.Minute))}, "new": {Since: metav1.NewTime(now)}, "cached": {Since: metav1.NewTime(now)}}
	kept, next := Settle(p, now, func(key string, e entry) time.Time {
		if key == "cached" {
			return time.Time{}
		}
		return e.Since.Add(30 * time.Second)
	})
	assert.Equal(t, map[string]entry{"new": {Since: metav1.NewTime(now)}}, kept)
	assert.Equal(t, 30*time.Second, next)

	raw, err := EncodePending(kept)
	require.NoError(t, err)
	back, err := ParsePending[entry](raw)
	require.NoError(t, err)
	require.Len(t, back, 1)
	assert.True(t, back["new"].Since.Time.Equal(kept["new"].Since.Time))
	empty, err := EncodePending(map[string]entry{})
	require.NoError(t, err)
	assert.Empty(t, empty)
	bad, err := ParsePending[entry]("{")
	require.Error(t, err)
	assert.Empty(t, bad)
}

func TestIncludeRetriesConflicts(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(configuration())
	conflicts := 2
	kube.PrependReactor("patch", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "validatingwebhookconfigurations"}, "cfg", nil)
		}
		return false, nil, nil
	})
	calls := 0
	require.NoError(t, target.Include(ctx, kube, func(_ context.Context, cur State) (Scope, string, bool, error) {
		calls++
		return Scope{"a.kb.io": cur.Scope["a.kb.io"] + " || x", "b.kb.io": "y"}, "p", true, nil
	}))
	assert.Equal(t, 3, calls, "computed again on what is there after each conflict")
	obj, err := target.Get(ctx, kube)
	require.NoError(t, err)
	s, _ := target.Read(obj)
	assert.Equal(t, Scope{"a.kb.io": "false || x", "b.kb.io": "y"}, s.Scope)
	assert.Equal(t, "p", s.Pending)

	// A configuration without the entries, or none at all, is left alone.
	bare := kubefake.NewClientset(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}})
	require.NoError(t, target.Include(ctx, bare, func(context.Context, State) (Scope, string, bool, error) {
		t.Fatal("not called")
		return nil, "", false, nil
	}))
	require.NoError(t, target.Include(ctx, kubefake.NewClientset(), nil))
}

func TestSync(t *testing.T) {
	kube := kubefake.NewClientset(configuration())
	rec := record.NewFakeRecorder(10)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	want := Want{Scope: Scope{"a.kb.io": "x", "b.kb.io": "y"}, Pending: "p", Next: time.Second, EventType: "Normal", Reason: "Updated", Message: "m"}
	c, err := New(Config{Name: "test-scope", Client: kube, Target: target, Recorder: rec, Clock: clk,
		Want: func(_ context.Context, cur State, now time.Time) (Want, error) {
			assert.Equal(t, clk.Now(), now)
			return want, nil
		}})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go c.Informer().RunWithContext(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), c.Informer().HasSynced))

	next, err := c.Sync(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, time.Second, next)
	assert.Contains(t, <-rec.Events, "Normal Updated m")

	// Once the cache shows it, nothing is written again.
	require.Eventually(t, func() bool {
		obj, _, _ := c.Informer().GetStore().GetByKey("cfg")
		s, _ := target.Read(obj.(runtime.Object))
		return s.Scope.Equal(want.Scope) && s.Pending == "p"
	}, 5*time.Second, 10*time.Millisecond)
	kube.ClearActions()
	_, err = c.Sync(ctx, key)
	require.NoError(t, err)
	for _, a := range kube.Actions() {
		assert.NotEqual(t, "patch", a.GetVerb())
	}

	// Events of other configurations do not queue the key.
	for c.Len() > 0 {
		k, _ := c.queue.Get()
		c.queue.Forget(k)
		c.queue.Done(k)
	}
	_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx,
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok, _ := c.Informer().GetStore().GetByKey("other"); return ok }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 0, c.Len())
}
