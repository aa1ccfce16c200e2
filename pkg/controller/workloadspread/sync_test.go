package workloadspread

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func webObjects(pods ...*corev1.Pod) []runtime.Object {
	out := []runtime.Object{deployment(4), replicaSet("abc", "1")}
	for _, p := range pods {
		out = append(out, p)
	}
	return out
}

func TestSyncWritesStatusAndCosts(t *testing.T) {
	f := newFixture(t, spreadOf("2"), webObjects(pod("a1", "a"), pod("a2", "a"), pod("a3", "a", func(p *corev1.Pod) {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	}), pod("b1", "b"), pod("done", "b", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })), Config{})
	assert.Zero(t, f.sync(t))
	st := f.status(t).Status
	assert.Equal(t, int64(1), st.ObservedGeneration)
	require.Len(t, st.SubsetStatuses, 2)
	assert.Equal(t, []int32{3, 0}, []int32{st.SubsetStatuses[0].Replicas, st.SubsetStatuses[0].MissingReplicas})
	assert.Equal(t, []int32{1, -1}, []int32{st.SubsetStatuses[1].Replicas, st.SubsetStatuses[1].MissingReplicas})
	require.Contains(t, st.VersionedSubsetStatuses, "abc")
	// The not-ready pod is a's surplus.
	assert.Equal(t, map[string]string{"a1": "200", "a2": "200", "a3": "-100", "b1": "100"}, f.costPatches(t))
}

// TestIdle: once status and costs are right, a reconcile writes nothing and asks for no requeue,
// and the events of an idle cluster (resyncs, status-only and unrelated updates) queue nothing.
func TestIdle(t *testing.T) {
	f := newFixture(t, spreadOf("2"), webObjects(pod("a1", "a"), pod("a2", "a"), pod("b1", "b")), Config{})
	f.sync(t)
	f.settle(t)

	assert.Zero(t, f.sync(t))
	assert.Empty(t, f.kube.Actions(), "no API request to Kubernetes")
	assert.Empty(t, f.kruise.Actions(), "no API request to kruise's API")

	// Resync: every object delivered again unchanged.
	ws := f.spreads.List()[0].(*appsv1alpha1.WorkloadSpread)
	f.ctrl.spreadUpdated(ws, ws)
	for _, o := range f.pods.List() {
		f.ctrl.podChanged(o, o)
	}
	f.ctrl.workloadChanged(deployment(4), deployment(4))
	f.ctrl.workloadChanged(replicaSet("abc", "1"), replicaSet("abc", "1"))
	// A pod's resourceVersion and an unrelated field change; the status changes by a write of
	// our own (entries dropped only); the Deployment's status moves.
	p := f.pods.List()[0].(*corev1.Pod)
	p2 := p.DeepCopy()
	p2.ResourceVersion = "99"
	p2.Status.StartTime = ptr.To(metav1.NewTime(now))
	f.ctrl.podChanged(p, p2)
	ws2 := ws.DeepCopy()
	ws2.Status.SubsetStatuses[0].CreatingPods = map[string]metav1.Time{"x": metav1.NewTime(now)}
	f.ctrl.spreadUpdated(ws2, ws)
	d := deployment(4)
	d.Status.ReadyReplicas = 3
	f.ctrl.workloadChanged(deployment(4), d)
	assert.Zero(t, f.ctrl.queue.Len(), "nothing queued")
	assert.Empty(t, f.kube.Actions())
	assert.Empty(t, f.kruise.Actions())
}

func TestEventsThatCount(t *testing.T) {
	base := pod("a1", "a")
	for name, change := range map[string]func(*corev1.Pod){
		"phase":    func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed },
		"ready":    func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse },
		"node":     func(p *corev1.Pod) { p.Spec.NodeName = "node-2" },
		"deletion": func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(now)) },
		"cost":     func(p *corev1.Pod) { p.Annotations[appsv1alpha1.PodDeletionCostAnnotation] = "5" },
		"subset": func(p *corev1.Pod) {
			p.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation] = `{"name":"web-ws","subset":"b"}`
		},
		"version": func(p *corev1.Pod) { p.Labels["pod-template-hash"] = "def" },
		"unscheduled": func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, spreadOf("2"), webObjects(base), Config{})
			cur := base.DeepCopy()
			change(cur)
			f.ctrl.podChanged(base, cur)
			assert.Equal(t, 1, f.ctrl.queue.Len())
		})
	}
	t.Run("pod added and deleted", func(t *testing.T) {
		f := newFixture(t, spreadOf("2"), webObjects(), Config{})
		f.ctrl.podChanged(nil, base)
		assert.Equal(t, 1, f.ctrl.queue.Len())
	})
	t.Run("the owner decides, not the annotation", func(t *testing.T) {
		f := newFixture(t, spreadOf("2"), webObjects(), Config{})
		orphan := base.DeepCopy()
		orphan.OwnerReferences = nil
		f.ctrl.podChanged(nil, orphan)
		other := base.DeepCopy()
		other.OwnerReferences[0].Name = "other-rs"
		f.ctrl.podChanged(nil, other)
		assert.Zero(t, f.ctrl.queue.Len())
	})
	t.Run("replicas and a new ReplicaSet", func(t *testing.T) {
		f := newFixture(t, spreadOf("2"), webObjects(), Config{})
		f.ctrl.workloadChanged(deployment(4), deployment(5))
		assert.Equal(t, 1, f.ctrl.queue.Len())
		k, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(k)
		f.ctrl.workloadChanged(nil, replicaSet("def", "2"))
		assert.Equal(t, 1, f.ctrl.queue.Len())
	})
	t.Run("spec and new ledger entries", func(t *testing.T) {
		f := newFixture(t, spreadOf("2"), webObjects(), Config{})
		ws := spreadOf("2")
		ws.Status.SubsetStatuses = []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a"}}
		charged := ws.DeepCopy()
		charged.Status.SubsetStatuses[0].CreatingPods = map[string]metav1.Time{"new": metav1.NewTime(now)}
		f.ctrl.spreadUpdated(ws, charged)
		assert.Equal(t, 1, f.ctrl.queue.Len())
		k, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(k)
		changed := ws.DeepCopy()
		changed.Generation = 2
		f.ctrl.spreadUpdated(ws, changed)
		assert.Equal(t, 1, f.ctrl.queue.Len())
	})
}

func TestSyncRequeuesAtNextExpiry(t *testing.T) {
	ws := spreadOf("2")
	ws.Status.SubsetStatuses = []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", CreatingPods: map[string]metav1.Time{"coming": metav1.NewTime(now.Add(-10 * time.Second))}}}
	f := newFixture(t, ws, webObjects(pod("a1", "a")), Config{})
	assert.Equal(t, 20*time.Second, f.sync(t))
	st := f.status(t).Status.SubsetStatuses[0]
	assert.Contains(t, st.CreatingPods, "coming")
	assert.Equal(t, int32(0), st.MissingReplicas)
	f.settle(t)
	f.clock.Step(20 * time.Second)
	assert.Zero(t, f.sync(t))
	st = f.status(t).Status.SubsetStatuses[0]
	assert.Empty(t, st.CreatingPods)
	assert.Equal(t, int32(1), st.MissingReplicas)
	assert.Contains(t, <-f.recorder.Events, ReasonCreatePodFailed)
}

func TestSyncBoundsPodWrites(t *testing.T) {
	f := newFixture(t, spreadOf(""), webObjects(pod("a1", "a"), pod("a2", "a"), pod("a3", "a"), pod("b1", "b"), pod("b2", "b")), Config{MaxPodWrites: 2})
	assert.Equal(t, time.Second, f.sync(t))
	assert.Len(t, f.costPatches(t), 2)
	f.settle(t)
	assert.Equal(t, time.Second, f.sync(t))
	assert.Len(t, f.costPatches(t), 2)
	f.settle(t)
	assert.Zero(t, f.sync(t))
	assert.Len(t, f.costPatches(t), 1)
}

func TestSyncStatusConflictIsRetried(t *testing.T) {
	f := newFixture(t, spreadOf("2"), webObjects(pod("a1", "a")), Config{})
	f.kruise.PrependReactor("update", "workloadspreads", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "workloadspreads"}, "web-ws", nil)
	})
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, ns+"/web-ws")
	assert.True(t, apierrors.IsConflict(err), "the loop requeues a conflict: %v", err)
}

func TestSyncAdaptiveReschedules(t *testing.T) {
	ws := spreadOf("2")
	ws.Spec.ScheduleStrategy = appsv1alpha1.WorkloadSpreadScheduleStrategy{Type: appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: ptr.To[int32](30)}}
	stuck := pod("stuck", "a", func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	})
	f := newFixture(t, ws, webObjects(pod("a1", "a"), stuck), Config{})
	assert.Zero(t, f.sync(t), "the pod's deletion wakes the controller")
	st := f.status(t).Status.SubsetStatuses
	assert.Equal(t, corev1.ConditionFalse, st[0].Conditions[0].Status)
	assert.Equal(t, corev1.ConditionTrue, st[1].Conditions[0].Status)
	var deleted []string
	for _, a := range f.kube.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
		}
	}
	assert.Equal(t, []string{"stuck"}, deleted)
	assert.Contains(t, <-f.recorder.Events, ReasonRescheduled)
	f.settle(t)
	assert.Equal(t, 300*time.Second, f.sync(t), "the subset recovers 300 s after it turned unschedulable")
	assert.Equal(t, corev1.ConditionFalse, f.status(t).Status.SubsetStatuses[0].Conditions[0].Status)
	f.settle(t)
	f.clock.Step(300 * time.Second)
	assert.Zero(t, f.sync(t))
	assert.Equal(t, corev1.ConditionTrue, f.status(t).Status.SubsetStatuses[0].Conditions[0].Status)
	assert.Contains(t, <-f.recorder.Events, ReasonRecovered)
}

func TestSyncBadTargets(t *testing.T) {
	t.Run("missing workload", func(t *testing.T) {
		f := newFixture(t, spreadOf("2"), nil, Config{})
		assert.Zero(t, f.sync(t))
		assert.Contains(t, <-f.recorder.Events, ReasonTargetNotFound)
	})
	t.Run("unknown kind without scale: its pods counted, the status written", func(t *testing.T) {
		ws := spreadOf("2")
		ws.Spec.TargetReference = &appsv1alpha1.TargetReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "web"}
		p := pod("t1", "a", func(p *corev1.Pod) {
			p.OwnerReferences[0] = metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "web", UID: "uid-thing", Controller: ptr.To(true)}
		})
		f := newFixture(t, ws, []runtime.Object{p}, Config{})
		assert.Zero(t, f.sync(t))
		assert.Contains(t, <-f.recorder.Events, ReasonUnsupportedTarget)
		st := f.status(t).Status
		assert.Equal(t, ws.Generation, st.ObservedGeneration)
		assert.Equal(t, int32(1), st.SubsetStatuses[0].Replicas)
		assert.Equal(t, int32(1), st.SubsetStatuses[0].MissingReplicas, "a count maxReplicas holds without the target's replicas")
	})
	t.Run("another kind through its scale subresource", func(t *testing.T) {
		ws := spreadOf("")
		ws.Spec.TargetReference = &appsv1alpha1.TargetReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "web"}
		p := pod("t1", "a", func(p *corev1.Pod) {
			p.OwnerReferences[0] = metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "web", UID: "uid-thing", Controller: ptr.To(true)}
		})
		f := newFixture(t, ws, []runtime.Object{p}, Config{Scale: func(_ context.Context, _ string, gk schema.GroupKind, name string) (int32, bool, error) {
			return 3, gk.Kind == "Thing" && name == "web", nil
		}})
		assert.Zero(t, f.sync(t))
		assert.Equal(t, int32(1), f.status(t).Status.SubsetStatuses[0].Replicas)
		assert.Empty(t, f.costPatches(t), "no deletion cost for a kind whose scale-in order is unknown")
	})
}

func TestSyncAdoptsExistingPods(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "x"}}}
	f := newFixture(t, spreadOf("2"), append(webObjects(pod("old", "")), node), Config{})
	f.sync(t)
	st := f.status(t).Status.SubsetStatuses
	assert.Equal(t, int32(1), st[0].Replicas, "counted in the subset it was adopted into")
	var patched bool
	for _, a := range f.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetName() == "old" && string(p.GetPatch()) != "" {
			patched = patched || strings.Contains(string(p.GetPatch()), appsv1alpha1.MatchedWorkloadSpreadAnnotation)
		}
	}
	assert.True(t, patched, "the matched-workloadspread annotation is written")
}

// A pod that fits no subset is read from the API server once, not at every reconcile, until it or
// the WorkloadSpread changes.
func TestSyncUnfitPodReadOnce(t *testing.T) {
	ws := spreadOf("2")
	ws.Spec.Subsets[0].RequiredNodeSelectorTerm = &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"y"}}}}
	ws.Spec.Subsets[1].RequiredNodeSelectorTerm = ws.Spec.Subsets[0].RequiredNodeSelectorTerm
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "x"}}}
	f := newFixture(t, ws, append(webObjects(pod("old", "")), node), Config{})
	gets := func() int {
		n := 0
		for _, a := range f.kube.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
				n++
			}
		}
		return n
	}
	f.sync(t)
	assert.Equal(t, 1, gets())
	f.settle(t)
	f.sync(t)
	assert.Zero(t, gets())
	assert.Empty(t, f.kube.Actions())

	changed := ws.DeepCopy()
	changed.Generation = 2
	require.NoError(t, f.spreads.Update(changed))
	f.sync(t)
	assert.Equal(t, 1, gets(), "read again once the spec changed")
}

// A CloneSet's pods are counted per revision (surge, #834) and the pods of revisions other than
// its updateRevision rank the subsets in reverse, every one below every pod of updateRevision (a
// surge pod is never deleted before an old one).
func TestSyncCloneSetVersions(t *testing.T) {
	ws := spreadOf("")
	ws.Spec.TargetReference = &appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}
	cs := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-cs"},
		Spec:   appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: appsv1beta1.CloneSetStatus{UpdateRevision: "web-new"}}
	csPod := func(name, subset, rev string) *corev1.Pod {
		return pod(name, subset, func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "web", "controller-revision-hash": "web-" + rev}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-cs", Controller: ptr.To(true)}}
		})
	}
	f := newFixture(t, ws, []runtime.Object{cs, csPod("new-a", "a", "new"), csPod("new-b", "b", "new"), csPod("old-a", "a", "old"), csPod("old-b", "b", "old")}, Config{})
	f.sync(t)
	st := f.status(t).Status
	assert.Len(t, st.VersionedSubsetStatuses, 2)
	assert.Equal(t, map[string]string{"new-a": "999999998", "new-b": "498999999", "old-a": "-501000001", "old-b": "-2"}, f.costPatches(t))
}

// TestSyncSubsetRemoved: when a subset leaves the spec its pods get the cost of pods in no subset
// (deleted first), written before the status that reports the new generation (the reference's
// "then deletion subset-b" case reads the costs once observedGeneration caught up).
func TestSyncSubsetRemoved(t *testing.T) {
	f := newFixture(t, spreadOf("3"), webObjects(pod("b1", "b"), pod("b2", "b"), pod("b3", "b")), Config{})
	f.sync(t)
	assert.Equal(t, map[string]string{"b1": "100", "b2": "100", "b3": "100"}, f.costPatches(t))
	f.settle(t)

	var order []string
	record := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			order = append(order, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
		return false, nil, nil
	}
	f.kube.PrependReactor("*", "*", record)
	f.kruise.PrependReactor("*", "*", record)
	ws := f.spreads.List()[0].(*appsv1alpha1.WorkloadSpread).DeepCopy()
	ws.Spec.Subsets = ws.Spec.Subsets[:1]
	ws.Generation = 2
	require.NoError(t, f.spreads.Update(ws))
	f.sync(t)
	assert.Equal(t, map[string]string{"b1": "-200", "b2": "-200", "b3": "-200"}, f.costPatches(t))
	assert.Equal(t, int64(2), f.status(t).Status.ObservedGeneration)
	assert.Equal(t, []string{"patch pods/", "patch pods/", "patch pods/", "update workloadspreads/status"}, order)
}
