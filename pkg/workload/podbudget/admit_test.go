package podbudget

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	policylisters "github.com/nodekruise/kruise/pkg/client/listers/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var pubResource = policyv1alpha1.SchemeGroupVersion.WithResource("podunavailablebudgets")

// newClient is a fake clientset holding budgets that, as the API server, refuses an update
// whose resourceVersion is not the stored one and bumps it on every write.
func newClient(budgets ...*policyv1alpha1.PodUnavailableBudget) *fake.Clientset {
	var objs []runtime.Object
	for _, b := range budgets {
		b = b.DeepCopy()
		if b.ResourceVersion == "" {
			b.ResourceVersion = "1"
		}
		objs = append(objs, b)
	}
	c := fake.NewSimpleClientset(objs...)
	c.PrependReactor("update", "podunavailablebudgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		in := a.(k8stesting.UpdateAction).GetObject().(*policyv1alpha1.PodUnavailableBudget)
		cur, err := c.Tracker().Get(pubResource, in.Namespace, in.Name)
		if err != nil {
			return true, nil, err
		}
		stored := cur.(*policyv1alpha1.PodUnavailableBudget)
		if stored.ResourceVersion != in.ResourceVersion {
			return true, nil, apierrors.NewConflict(pubResource.GroupResource(), in.Name, fmt.Errorf("stored %s, sent %s", stored.ResourceVersion, in.ResourceVersion))
		}
		rv, _ := strconv.Atoi(stored.ResourceVersion)
		out := in.DeepCopy()
		out.ResourceVersion = strconv.Itoa(rv + 1)
		return true, out, c.Tracker().Update(pubResource, out, in.Namespace)
	})
	return c
}

// lister is a cache holding copies of budgets.
func lister(t *testing.T, budgets ...*policyv1alpha1.PodUnavailableBudget) policylisters.PodUnavailableBudgetLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, b := range budgets {
		b = b.DeepCopy()
		if b.ResourceVersion == "" {
			b.ResourceVersion = "1"
		}
		require.NoError(t, idx.Add(b))
	}
	return policylisters.NewPodUnavailableBudgetLister(idx)
}

func writes(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "update" {
			n++
		}
	}
	return n
}

func stored(t *testing.T, c *fake.Clientset, name string) *policyv1alpha1.PodUnavailableBudget {
	b, err := c.PolicyV1alpha1().PodUnavailableBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return b
}

func counted(allowed, current, desired, total int32) gen.PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) {
		b.Status.UnavailableAllowed, b.Status.CurrentAvailable, b.Status.DesiredAvailable, b.Status.TotalReplicas = allowed, current, desired, total
	}
}

// TestAdmitNeverExceedsTheBudget races callers that all see, in their cache, one disruption
// allowed: the API server's resourceVersion check lets exactly one charge through.
func TestAdmitNeverExceedsTheBudget(t *testing.T) {
	b := budget(counted(1, 5, 4, 5))
	c := newClient(b)
	a := NewAdmitter(AdmitterConfig{Client: c, Budgets: lister(t, b), Clock: clocktesting.NewFakePassiveClock(t0)})
	const callers = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	var allowed []string
	var reasons []string
	for i := range callers {
		pod := readyPod(fmt.Sprintf("p%d", i))
		wg.Go(func() {
			ok, reason, err := a.Admit(context.Background(), pod, policyv1alpha1.PubDeleteOperation, false)
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				allowed = append(allowed, pod.Name)
			} else {
				reasons = append(reasons, reason)
			}
		})
	}
	wg.Wait()
	require.Len(t, allowed, 1)
	assert.Len(t, reasons, callers-1)
	for _, r := range reasons {
		assert.Contains(t, r, "PodUnavailableBudget default/web-pub: no more unavailable pods allowed")
	}
	got := stored(t, c, "web-pub")
	assert.Equal(t, map[string]metav1.Time{allowed[0]: metav1.NewTime(t0)}, got.Status.DisruptedPods)
	assert.Equal(t, int32(0), got.Status.UnavailableAllowed)
	assert.Equal(t, 1.0, decisions(t, a, "charged"))
	assert.Equal(t, float64(callers-1), decisions(t, a, "refused"))
	assert.Len(t, a.Collectors(), 1)
}

func TestAdmit(t *testing.T) {
	noProtect := gen.AddPodAnnotations(map[string]string{policyv1alpha1.PodPubNoProtectionAnnotation: "true"})
	for name, tc := range map[string]struct {
		cached, live *policyv1alpha1.PodUnavailableBudget // nil cached: no lister
		pod          *corev1.Pod
		op           policyv1alpha1.PubOperation
		dryRun       bool
		want         bool
		reason       string
		writes       int
		event        string
	}{
		"no budget":                  {pod: readyPod("p"), op: policyv1alpha1.PubDeleteOperation, want: true},
		"no-protect":                 {cached: budget(counted(0, 4, 4, 5)), live: budget(counted(0, 4, 4, 5)), pod: readyPod("p", noProtect), op: policyv1alpha1.PubDeleteOperation, want: true},
		"not covered":                {cached: budget(counted(0, 4, 4, 5)), live: budget(counted(0, 4, 4, 5)), pod: readyPod("p", gen.AddPodLabels(map[string]string{"app": "db"})), op: policyv1alpha1.PubDeleteOperation, want: true},
		"operation not guarded":      {cached: budget(counted(0, 4, 4, 5)), live: budget(counted(0, 4, 4, 5)), pod: readyPod("p"), op: policyv1alpha1.PubResizeOperation, want: true},
		"pod not available":          {cached: budget(counted(0, 4, 4, 5)), live: budget(counted(0, 4, 4, 5)), pod: readyPod("p", notReady), op: policyv1alpha1.PubEvictOperation, want: true},
		"unready pod protected":      {cached: budget(counted(0, 4, 4, 5), protectUnready), live: budget(counted(0, 4, 4, 5), protectUnready), pod: readyPod("p", notReady), op: policyv1alpha1.PubEvictOperation, reason: "no more unavailable pods allowed", event: "Warning PubPreventPodDeletion"},
		"charged":                    {cached: budget(counted(1, 5, 4, 5)), live: budget(counted(1, 5, 4, 5)), pod: readyPod("p"), op: policyv1alpha1.PubDeleteOperation, want: true, writes: 1},
		"dry run":                    {cached: budget(counted(1, 5, 4, 5)), live: budget(counted(1, 5, 4, 5)), pod: readyPod("p"), op: policyv1alpha1.PubDeleteOperation, dryRun: true, want: true},
		"refused":                    {cached: budget(counted(0, 4, 4, 5)), live: budget(counted(0, 4, 4, 5)), pod: readyPod("p"), op: policyv1alpha1.PubUpdateOperation, reason: "(1 unavailable of maxUnavailable 1; current available 4, desired 4)", event: "Warning PubPreventPodUpdate"},
		"stale cache, live has room": {cached: budget(counted(0, 4, 4, 5)), live: budget(counted(1, 5, 4, 5), gen.SetPUBResourceVersion("7")), pod: readyPod("p"), op: policyv1alpha1.PubDeleteOperation, want: true, writes: 1},
		"no lister reads live":       {live: budget(counted(1, 5, 4, 5)), pod: readyPod("p"), op: policyv1alpha1.PubUpdateOperation, want: true, writes: 1},
		"budget gone since cached":   {cached: budget(counted(1, 5, 4, 5)), pod: readyPod("p"), op: policyv1alpha1.PubDeleteOperation, want: true, writes: 1},
		"target through owners":      {cached: target(counted(0, 4, 4, 5)), live: target(counted(0, 4, 4, 5)), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "web-abc")), op: policyv1alpha1.PubDeleteOperation, reason: "no more", event: "Warning PubPreventPodDeletion"},
		"per workload charged":       {cached: budget(perWorkloadOn, counted(1, 5, 4, 5), withWorkload("web", 1, 3, 2, 3)), live: budget(perWorkloadOn, counted(1, 5, 4, 5), withWorkload("web", 1, 3, 2, 3)), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "web-abc")), op: policyv1alpha1.PubDeleteOperation, want: true, writes: 1},
		"per workload, other full":   {cached: budget(perWorkloadOn, counted(1, 5, 4, 5), withWorkload("web", 1, 3, 2, 3)), live: budget(perWorkloadOn, counted(1, 5, 4, 5), withWorkload("web", 1, 3, 2, 3)), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "solo")), op: policyv1alpha1.PubDeleteOperation, reason: "no numbers for ReplicaSet/solo", event: "Warning PubPreventPodDeletion"},
	} {
		t.Run(name, func(t *testing.T) {
			var c *fake.Clientset
			if tc.live != nil {
				c = newClient(tc.live)
			} else {
				c = newClient()
			}
			rec := record.NewFakeRecorder(10)
			cfg := AdmitterConfig{Client: c, Owners: owners, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(t0)}
			if tc.cached != nil {
				cfg.Budgets = lister(t, tc.cached)
			}
			ok, reason, err := NewAdmitter(cfg).Admit(context.Background(), tc.pod, tc.op, tc.dryRun)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ok)
			if tc.reason == "" {
				assert.Empty(t, reason)
			} else {
				assert.Contains(t, reason, tc.reason)
			}
			assert.Equal(t, tc.writes, writes(c))
			events := gen.DrainEvents(rec)
			if tc.event == "" {
				assert.Empty(t, events)
			} else {
				require.Len(t, events, 1)
				assert.Contains(t, events[0], tc.event+" "+reason)
			}
			if tc.writes > 0 && tc.live != nil {
				got := stored(t, c, "web-pub")
				assert.Equal(t, tc.live.Status.UnavailableAllowed-1, got.Status.UnavailableAllowed)
				_, inDisrupted := got.Status.DisruptedPods["p"]
				_, inUnavailable := got.Status.UnavailablePods["p"]
				assert.Equal(t, tc.op == policyv1alpha1.PubUpdateOperation, inUnavailable)
				assert.Equal(t, tc.op != policyv1alpha1.PubUpdateOperation, inDisrupted)
				if len(got.Status.Workloads) > 0 {
					assert.Equal(t, int32(0), got.Status.Workloads[0].UnavailableAllowed)
				}
			}
		})
	}
}

func protectUnready(b *policyv1alpha1.PodUnavailableBudget) {
	gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubProtectUnreadyPodsAnnotation: "true"})(b)
}

func perWorkloadOn(b *policyv1alpha1.PodUnavailableBudget) {
	gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubBudgetPerWorkloadAnnotation: "true"})(b)
}

func target(mods ...gen.PUBModifier) *policyv1alpha1.PodUnavailableBudget {
	b := budget(append([]gen.PUBModifier{gen.SetPUBTarget("apps/v1", "Deployment", "web")}, mods...)...)
	b.Spec.Selector = nil
	return b
}

func TestAdmitGivesUpAfterConflicts(t *testing.T) {
	b := budget(counted(1, 5, 4, 5))
	c := newClient(b)
	c.PrependReactor("update", "podunavailablebudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(pubResource.GroupResource(), b.Name, fmt.Errorf("always"))
	})
	a := NewAdmitter(AdmitterConfig{Client: c, Budgets: lister(t, b), Attempts: 3})
	ok, _, err := a.Admit(context.Background(), readyPod("p"), policyv1alpha1.PubDeleteOperation, false)
	assert.False(t, ok)
	assert.ErrorContains(t, err, "kept changing")
	assert.Equal(t, 3, writes(c))
	assert.Equal(t, 1.0, decisions(t, a, "error"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, _, err = a.Admit(ctx, readyPod("p"), policyv1alpha1.PubDeleteOperation, false)
	assert.False(t, ok)
	assert.ErrorIs(t, err, context.Canceled)
}

// decisions reads the counter of a's DELETE decisions with result.
func decisions(t *testing.T, a *Admitter, result string) float64 {
	var m dto.Metric
	require.NoError(t, a.decisions.WithLabelValues("DELETE", result).Write(&m))
	return m.GetCounter().GetValue()
}
