package resourcedistribution

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

type harness struct {
	t       *testing.T
	ctx     context.Context
	client  *fake.Clientset
	kruise  *kruisefake.Clientset
	c       *Controller
	rdStore cache.Store
	after   time.Duration // what the last pass asked
}

func newHarness(t *testing.T, rd *appsv1alpha1.ResourceDistribution, objs ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, true, rd, objs...)
}

// newHarnessWith runs the copy caches only with runCopies (without, they never show a copy: as if
// no event of them had arrived yet).
func newHarnessWith(t *testing.T, runCopies bool, rd *appsv1alpha1.ResourceDistribution, objs ...runtime.Object) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := fake.NewClientset(objs...)
	kruise := kruisefake.NewSimpleClientset(rd)
	f := informers.NewSharedInformerFactory(client, 0)
	kf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	c, err := New(Config{Config: ctrlbase.Config{Client: client, KruiseClient: kruise},
		Distributions: kf.Apps().V1alpha1().ResourceDistributions(), Namespaces: f.Core().V1().Namespaces()})
	require.NoError(t, err)
	f.Start(ctx.Done())
	kf.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	for _, inf := range c.copies {
		if !runCopies {
			break
		}
		go inf.RunWithContext(ctx)
		require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	}
	return &harness{t: t, ctx: ctx, client: client, kruise: kruise, c: c, rdStore: kf.Apps().V1alpha1().ResourceDistributions().Informer().GetStore()}
}

// pass runs one sync and returns the write verbs it sent, e.g. "create secrets team-a".
func (h *harness) pass() []string {
	h.t.Helper()
	h.client.ClearActions()
	h.kruise.ClearActions()
	after, err := h.c.sync(h.ctx, "dist")
	require.NoError(h.t, err)
	h.after = after
	var writes []string
	for _, a := range append(h.client.Actions(), h.kruise.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		w := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			w += "/" + a.GetSubresource()
		}
		if ns := a.GetNamespace(); ns != "" {
			w += " " + ns
		}
		writes = append(writes, w)
	}
	return writes
}

// settle waits until the caches show what the API holds: copies with the label, and the status.
func (h *harness) settle(copies int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		return len(h.c.copies[KindSecret].GetStore().List()) == copies
	}, 5*time.Second, time.Millisecond)
	cur, err := h.kruise.AppsV1alpha1().ResourceDistributions().Get(h.ctx, "dist", metav1.GetOptions{})
	require.NoError(h.t, err)
	require.Eventually(h.t, func() bool {
		obj, ok, _ := h.rdStore.GetByKey("dist")
		// (the fake API sets no resourceVersion: compare what the pass reads)
		return ok && !statusChanged(&obj.(*appsv1alpha1.ResourceDistribution).Status, &cur.Status)
	}, 5*time.Second, time.Millisecond)
}

func (h *harness) status() appsv1alpha1.ResourceDistributionStatus {
	cur, err := h.kruise.AppsV1alpha1().ResourceDistributions().Get(h.ctx, "dist", metav1.GetOptions{})
	require.NoError(h.t, err)
	return cur.Status
}

func (h *harness) secret(ns string) *corev1.Secret {
	s, err := h.client.CoreV1().Secrets(ns).Get(h.ctx, "creds", metav1.GetOptions{})
	require.NoError(h.t, err)
	return s
}

func TestSyncDistributesAndKeepsCopies(t *testing.T) {
	rd := rdWith(secretJSON, appsv1alpha1.ResourceDistributionTargets{
		NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"creds": "yes"}}})
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "theirs"}, Data: map[string][]byte{"mine": []byte("x")}}
	h := newHarness(t, rd, namespace("team-a", map[string]string{"creds": "yes"}), namespace("team-b", map[string]string{"creds": "yes"}),
		namespace("other", nil), namespace("theirs", map[string]string{"creds": "yes"}), theirs)

	assert.ElementsMatch(t, []string{"create secrets team-a", "create secrets team-b", "create secrets theirs",
		"update resourcedistributions/status"}, h.pass())
	s := h.secret("team-a")
	assert.Equal(t, []byte("v"), s.Data["k"])
	assert.Equal(t, "dist", s.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation])
	assert.Equal(t, "true", s.Labels[CopyLabel])
	assert.Equal(t, theirs.Data, h.secret("theirs").Data, "an object it does not own is left alone")
	st := h.status()
	assert.Equal(t, int32(3), st.Desired)
	assert.Equal(t, int32(2), st.Succeeded)
	assert.Equal(t, int32(1), st.Failed)
	assert.Equal(t, []string{"theirs"}, st.Conditions[4].FailedNamespaces)
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionTrue, st.Conditions[4].Status)

	// Nothing changed: the next pass writes nothing (the conflict's object is in no cache, so
	// its create is tried again and refused; that is the only request besides reads).
	h.settle(2)
	assert.Equal(t, []string{"create secrets theirs"}, h.pass())
	assert.Equal(t, ConflictRecheck, h.after, "a conflict is looked at again: its object sends no event")

	// An edited copy is reverted.
	edited := h.secret("team-a")
	edited.Data["k"] = []byte("tampered")
	_, err := h.client.CoreV1().Secrets("team-a").Update(h.ctx, edited, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		o, _, _ := h.c.copies[KindSecret].GetStore().GetByKey("team-a/creds")
		return string(o.(*corev1.Secret).Data["k"]) == "tampered"
	}, 5*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"update secrets team-a", "create secrets theirs"}, h.pass())
	assert.Equal(t, []byte("v"), h.secret("team-a").Data["k"])

	// A namespace that leaves the targets loses its copy.
	nsB, err := h.client.CoreV1().Namespaces().Get(h.ctx, "team-b", metav1.GetOptions{})
	require.NoError(t, err)
	nsB.Labels = nil
	_, err = h.client.CoreV1().Namespaces().Update(h.ctx, nsB, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ns, _ := h.c.nsLister.Get("team-b")
		return len(ns.Labels) == 0
	}, 5*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"delete secrets team-b", "create secrets theirs", "update resourcedistributions/status"}, h.pass())
	assert.Equal(t, int32(2), h.status().Desired)
}

// A copy OpenKruise made (its controller reference, no label) is adopted: labelled on the first
// pass, and deleted when its namespace leaves the targets.
func TestSyncAdoptsUnlabelledCopies(t *testing.T) {
	rd := rdWith(secretJSON, appsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: included("kept")})
	old := func(ns string) *corev1.Secret {
		s := ownedCopy(t, rd, ns)
		delete(s.Labels, CopyLabel)
		return s
	}
	h := newHarness(t, rd, namespace("kept", nil), namespace("left", nil), old("kept"), old("left"))
	assert.ElementsMatch(t, []string{"update secrets kept", "delete secrets left", "update resourcedistributions/status"}, h.pass())
	assert.Equal(t, "true", h.secret("kept").Labels[CopyLabel])
	h.settle(1)
	assert.Empty(t, h.pass())
	assert.Zero(t, h.after, "nothing to look at again")
}

// Namespace events queue only the distributions whose targets they change.
func TestNamespaceEventsQueueMatchingDistributions(t *testing.T) {
	rd := rdWith(secretJSON, appsv1alpha1.ResourceDistributionTargets{
		NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"creds": "yes"}}})
	h := newHarness(t, rd)
	for h.c.queue.Len() > 0 {
		k, _ := h.c.queue.Get()
		h.c.queue.Done(k)
		h.c.queue.Forget(k)
	}
	plain, labelled := namespace("x", nil), namespace("x", map[string]string{"creds": "yes"})
	h.c.namespaceChanged(nil, plain)
	assert.Equal(t, 0, h.c.queue.Len(), "a namespace no target chooses")
	other := plain.DeepCopy()
	other.Labels = map[string]string{"unrelated": "1"}
	h.c.namespaceChanged(plain, other)
	assert.Equal(t, 0, h.c.queue.Len(), "a label change that moves it in no target")
	h.c.namespaceChanged(plain, labelled)
	assert.Equal(t, 1, h.c.queue.Len(), "entering the targets")
}

// A deleted distribution is forgotten: a new one of the same name looks for copies to adopt again.
func TestDeletedDistributionForgotten(t *testing.T) {
	rd := rdWith(secretJSON, appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true})
	h := newHarness(t, rd)
	h.pass()
	assert.True(t, h.c.adopted[rd.UID])
	h.c.forgetDistribution(cache.DeletedFinalStateUnknown{Key: "dist", Obj: rd})
	assert.False(t, h.c.adopted[rd.UID])
}

// The pass that a creation's own event starts, before the cache shows the copy, does not create
// it again (nor read it back): the copy counts as made.
func TestCreatedCopiesNotCreatedAgainBeforeTheCacheShowsThem(t *testing.T) {
	rd := rdWith(secretJSON, appsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: included("a", "b")})
	h := newHarnessWith(t, false, rd, namespace("a", nil), namespace("b", nil))
	assert.ElementsMatch(t, []string{"create secrets a", "create secrets b", "update resourcedistributions/status"}, h.pass())
	h.settle(0)
	assert.Empty(t, h.pass())
	assert.Equal(t, int32(2), h.status().Succeeded)
}
