package uniteddeployment

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
)

// fixture runs the controller on informers that are never started: after each sync the test
// copies what the fake API servers hold into the caches (settle), so nothing runs behind its back.
type fixture struct {
	t        *testing.T
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	uds      cache.Indexer
	indexers map[string]cache.Indexer
}

// named gives created objects with only a generateName a name, as the API server does.
func named(counter *int) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		m, err := metav1Object(obj)
		if err == nil && m.GetName() == "" && m.GetGenerateName() != "" {
			*counter++
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), *counter))
			m.SetUID(types.UID(fmt.Sprintf("uid-%s", m.GetName())))
			m.SetCreationTimestamp(metav1.NewTime(now.Add(time.Duration(*counter) * time.Second)))
		}
		return false, nil, nil
	}
}

func metav1Object(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

func newFixture(t *testing.T, ud *appsv1alpha1.UnitedDeployment) *fixture {
	t.Helper()
	f := &fixture{t: t, kube: fake.NewClientset(), kruise: kruisefake.NewSimpleClientset(ud),
		recorder: record.NewFakeRecorder(1000), clock: clocktesting.NewFakeClock(now)}
	var counter int
	f.kube.PrependReactor("create", "*", named(&counter))
	f.kruise.PrependReactor("create", "*", named(&counter))
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	cfg := Config{
		UnitedDeployments:    kf.Apps().V1alpha1().UnitedDeployments(),
		CloneSets:            kf.Apps().V1beta1().CloneSets(),
		AdvancedStatefulSets: kf.Apps().V1beta1().StatefulSets(),
		StatefulSets:         factory.Apps().V1().StatefulSets(),
		Deployments:          factory.Apps().V1().Deployments(),
		ReplicaSets:          factory.Apps().V1().ReplicaSets(),
		Pods:                 factory.Core().V1().Pods(),
		Revisions:            factory.Apps().V1().ControllerRevisions(),
	}
	cfg.Client, cfg.KruiseClient, cfg.Recorder, cfg.Clock = f.kube, f.kruise, f.recorder, f.clock
	ctrl, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	f.ctrl = ctrl
	f.uds = cfg.UnitedDeployments.Informer().GetIndexer()
	f.indexers = map[string]cache.Indexer{
		"clonesets": cfg.CloneSets.Informer().GetIndexer(), "advanced": cfg.AdvancedStatefulSets.Informer().GetIndexer(),
		"statefulsets": cfg.StatefulSets.Informer().GetIndexer(), "deployments": cfg.Deployments.Informer().GetIndexer(),
		"pods": cfg.Pods.Informer().GetIndexer(), "revisions": cfg.Revisions.Informer().GetIndexer(),
	}
	f.settle()
	return f
}

// settle copies the fake servers' objects into the caches.
func (f *fixture) settle() {
	ctx := context.Background()
	replace := func(idx cache.Indexer, objs []any) {
		require.NoError(f.t, idx.Replace(objs, ""))
	}
	uds, _ := f.kruise.AppsV1alpha1().UnitedDeployments(ns).List(ctx, metav1.ListOptions{})
	var items []any
	for i := range uds.Items {
		items = append(items, &uds.Items[i])
	}
	replace(f.uds, items)
	cs, _ := f.kruise.AppsV1beta1().CloneSets(ns).List(ctx, metav1.ListOptions{})
	items = nil
	for i := range cs.Items {
		items = append(items, &cs.Items[i])
	}
	replace(f.indexers["clonesets"], items)
	as, _ := f.kruise.AppsV1beta1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	items = nil
	for i := range as.Items {
		items = append(items, &as.Items[i])
	}
	replace(f.indexers["advanced"], items)
	ss, _ := f.kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	items = nil
	for i := range ss.Items {
		items = append(items, &ss.Items[i])
	}
	replace(f.indexers["statefulsets"], items)
	ds, _ := f.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	items = nil
	for i := range ds.Items {
		items = append(items, &ds.Items[i])
	}
	replace(f.indexers["deployments"], items)
	pods, _ := f.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	items = nil
	for i := range pods.Items {
		items = append(items, &pods.Items[i])
	}
	replace(f.indexers["pods"], items)
	revs, _ := f.kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	items = nil
	for i := range revs.Items {
		items = append(items, &revs.Items[i])
	}
	replace(f.indexers["revisions"], items)
}

// sync runs one reconcile, settles the caches and returns the writes it made.
func (f *fixture) sync() (time.Duration, []k8stesting.Action) {
	f.t.Helper()
	f.kube.ClearActions()
	f.kruise.ClearActions()
	_, ctx := ktesting.NewTestContext(f.t)
	after, err := f.ctrl.sync(ctx, ns+"/web")
	require.NoError(f.t, err)
	var writes []k8stesting.Action
	for _, a := range append(f.kube.Actions(), f.kruise.Actions()...) {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			writes = append(writes, a)
		}
	}
	f.settle()
	return after, writes
}

func (f *fixture) ud() *appsv1alpha1.UnitedDeployment {
	ud, err := f.kruise.AppsV1alpha1().UnitedDeployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(f.t, err)
	return ud
}

func (f *fixture) updateSpec(mutate func(*appsv1alpha1.UnitedDeployment)) {
	ud := f.ud()
	mutate(ud)
	ud.Generation++
	_, err := f.kruise.AppsV1alpha1().UnitedDeployments(ns).Update(context.Background(), ud, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	f.settle()
}

func (f *fixture) cloneSets() map[string]*appsv1beta1.CloneSet {
	list, err := f.kruise.AppsV1beta1().CloneSets(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(f.t, err)
	out := map[string]*appsv1beta1.CloneSet{}
	for i := range list.Items {
		cs := &list.Items[i]
		out[cs.Labels[appsv1alpha1.SubSetNameLabelKey]] = cs
	}
	return out
}

// runCloneSets plays the CloneSet controller: every CloneSet's pods all exist, ready, at the
// given UnitedDeployment revision but for partition of them, and its status says so.
func (f *fixture) runCloneSets(oldRevision string) {
	ctx := context.Background()
	for _, cs := range f.cloneSets() {
		replicas := *cs.Spec.Replicas
		partition := int32(0)
		if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			partition = ru.Partition.IntVal
		}
		pods, _ := f.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			if p.Labels[appsv1alpha1.SubSetNameLabelKey] == cs.Labels[appsv1alpha1.SubSetNameLabelKey] {
				require.NoError(f.t, f.kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}))
			}
		}
		for i := range replicas {
			rev := cs.Spec.Template.Labels[RevisionLabel]
			if i < partition && oldRevision != "" {
				rev = oldRevision
			}
			labels := map[string]string{}
			for k, v := range cs.Spec.Template.Labels {
				labels[k] = v
			}
			labels[RevisionLabel] = rev
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", cs.Name, i), Namespace: ns, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: cs.Name, UID: cs.UID, Controller: ptr.To(true)}}},
				Spec:   corev1.PodSpec{NodeName: "node"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
			_, err := f.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			require.NoError(f.t, err)
		}
		cs.Status.Replicas, cs.Status.ReadyReplicas = replicas, replicas
		_, err := f.kruise.AppsV1beta1().CloneSets(ns).UpdateStatus(ctx, cs, metav1.UpdateOptions{})
		require.NoError(f.t, err)
	}
	f.settle()
}

func verbs(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

func TestSyncCreatesSubsetsThenIsQuiet(t *testing.T) {
	f := newFixture(t, newUD(kindCloneSet, 7))
	_, writes := f.sync()
	assert.ElementsMatch(t, []string{"create controllerrevisions", "create clonesets", "create clonesets", "create clonesets",
		"update uniteddeployments/status"}, verbs(writes))
	sets := f.cloneSets()
	require.Len(t, sets, 3)
	assert.Equal(t, int32(2), *sets["a"].Spec.Replicas)
	assert.Equal(t, int32(2), *sets["b"].Spec.Replicas)
	assert.Equal(t, int32(3), *sets["c"].Spec.Replicas)

	f.runCloneSets("")
	_, writes = f.sync()
	assert.Equal(t, []string{"update uniteddeployments/status"}, verbs(writes))
	ud := f.ud()
	rev := ud.Status.UpdateStatus.UpdatedRevision
	assert.Equal(t, appsv1alpha1.UnitedDeploymentStatus{
		ObservedGeneration: 1, Replicas: 7, ReadyReplicas: 7, UpdatedReplicas: 7, UpdatedReadyReplicas: 7,
		CollisionCount: ptr.To[int32](0), CurrentRevision: rev,
		SubsetReplicas: map[string]int32{"a": 2, "b": 2, "c": 3},
		SubsetStatuses: []appsv1alpha1.UnitedDeploymentSubsetStatus{
			{Name: "a", Replicas: 2, ReadyReplicas: 2}, {Name: "b", Replicas: 2, ReadyReplicas: 2}, {Name: "c", Replicas: 3, ReadyReplicas: 3}},
		Conditions:    ud.Status.Conditions,
		UpdateStatus:  &appsv1alpha1.UpdateStatus{UpdatedRevision: rev, CurrentPartitions: map[string]int32{"a": 0, "b": 0, "c": 0}},
		LabelSelector: "app=web",
	}, ud.Status)
	types := map[appsv1alpha1.UnitedDeploymentConditionType]corev1.ConditionStatus{}
	for _, c := range ud.Status.Conditions {
		types[c.Type] = c.Status
	}
	assert.Equal(t, map[appsv1alpha1.UnitedDeploymentConditionType]corev1.ConditionStatus{
		appsv1alpha1.UnitedDeploymentUpdated: corev1.ConditionTrue, appsv1alpha1.SubsetProvisioned: corev1.ConditionTrue,
		appsv1alpha1.SubsetUpdated: corev1.ConditionTrue}, types)

	// Steady: nothing to write, no timer.
	after, writes := f.sync()
	assert.Empty(t, writes)
	assert.Zero(t, after)
}

func TestSyncScalesAndUpdatesWithPartitions(t *testing.T) {
	f := newFixture(t, newUD(kindCloneSet, 6))
	f.sync()
	f.runCloneSets("")
	f.sync()
	oldRev := f.ud().Status.CurrentRevision

	f.updateSpec(func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Replicas = ptr.To[int32](9)
		ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1, "b": 5}}
		ud.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	})
	_, writes := f.sync()
	assert.ElementsMatch(t, []string{"create controllerrevisions", "update clonesets", "update clonesets", "update clonesets",
		"update uniteddeployments/status"}, verbs(writes))
	sets := f.cloneSets()
	newRev := f.ud().Status.UpdateStatus.UpdatedRevision
	assert.NotEqual(t, oldRev, newRev)
	for name, want := range map[string][2]int32{"a": {3, 1}, "b": {3, 3}, "c": {3, 0}} {
		cs := sets[name]
		assert.Equal(t, want[0], *cs.Spec.Replicas, name)
		assert.Equal(t, want[1], cs.Spec.UpdateStrategy.RollingUpdate.Partition.IntVal, name+": partition capped at replicas")
		assert.Equal(t, newRev, cs.Labels[RevisionLabel])
		assert.Equal(t, "nginx:2", cs.Spec.Template.Spec.Containers[0].Image)
	}

	f.runCloneSets(oldRev)
	f.sync()
	ud := f.ud()
	assert.Equal(t, int32(9), ud.Status.Replicas)
	assert.Equal(t, int32(5), ud.Status.UpdatedReplicas, "a: 3-1, b: 3-3, c: 3-0")
	assert.Equal(t, oldRev, ud.Status.CurrentRevision, "not all pods are updated")
	assert.Equal(t, map[string]int32{"a": 1, "b": 3, "c": 0}, ud.Status.UpdateStatus.CurrentPartitions)
	assert.Equal(t, int32(3), ud.Status.SubsetStatuses[1].Partition)

	f.updateSpec(func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.UpdateStrategy.ManualUpdate = nil })
	f.sync()
	f.runCloneSets(oldRev)
	f.sync()
	ud = f.ud()
	assert.Equal(t, newRev, ud.Status.CurrentRevision, "current follows once every pod is updated and ready")
}

func TestSyncRemovedRenamedAndDuplicateSubsets(t *testing.T) {
	f := newFixture(t, newUD(kindCloneSet, 6))
	f.sync()
	f.runCloneSets("")
	sets := f.cloneSets()
	// A duplicate of subset a, made later than the first.
	dup := sets["a"].DeepCopy()
	dup.Name, dup.UID, dup.ResourceVersion = "web-a-dup", "uid-dup", ""
	dup.CreationTimestamp = metav1.NewTime(now.Add(time.Hour))
	_, err := f.kruise.AppsV1beta1().CloneSets(ns).Create(context.Background(), dup, metav1.CreateOptions{})
	require.NoError(t, err)
	f.settle()

	f.updateSpec(func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Topology.Subsets = []appsv1alpha1.Subset{zone("a"), zone("b2")} // c removed, b renamed b2
	})
	_, writes := f.sync()
	var deleted []string
	for _, a := range writes {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
		}
	}
	assert.ElementsMatch(t, []string{"web-a-dup", sets["b"].Name, sets["c"].Name}, deleted)
	after := f.cloneSets()
	require.Len(t, after, 2)
	assert.Equal(t, sets["a"].Name, after["a"].Name, "the oldest of duplicates is kept")
	assert.Equal(t, int32(3), *after["a"].Spec.Replicas)
	assert.Equal(t, int32(3), *after["b2"].Spec.Replicas)
	assert.Equal(t, []string{"a", "b2"}, []string{f.ud().Status.SubsetStatuses[0].Name, f.ud().Status.SubsetStatuses[1].Name})
}

func TestSyncRecreatesOnKindOrSelectorChange(t *testing.T) {
	f := newFixture(t, newUD(kindCloneSet, 3))
	f.sync()
	require.Len(t, f.cloneSets(), 3)

	// The template's kind changes: the CloneSets go, Deployments come.
	f.updateSpec(func(ud *appsv1alpha1.UnitedDeployment) {
		d := newUD(kindDeployment, 3)
		ud.Spec.Template = d.Spec.Template
	})
	f.sync()
	assert.Empty(t, f.cloneSets())
	ds, err := f.kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, ds.Items, 3)

	// The selector changes: each Deployment is recreated with the new one.
	f.updateSpec(func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Selector.MatchLabels["tier"] = "front"
		ud.Spec.Template.DeploymentTemplate.Labels["tier"] = "front"
		ud.Spec.Template.DeploymentTemplate.Spec.Template.Labels["tier"] = "front"
	})
	_, writes := f.sync()
	assert.Equal(t, 3, countVerb(writes, "delete"))
	assert.Equal(t, 3, countVerb(writes, "create")-1, "three Deployments and a revision")
	ds, err = f.kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, ds.Items, 3)
	for _, d := range ds.Items {
		assert.Equal(t, "front", d.Spec.Selector.MatchLabels["tier"])
	}
}

func countVerb(actions []k8stesting.Action, verb string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
}

func TestSyncBadPatchIsAConditionNotALoop(t *testing.T) {
	ud := newUD(kindCloneSet, 3)
	ud.Spec.Topology.Subsets[0].Patch = raw(`{"spec":{"containers":"not a list"}}`)
	f := newFixture(t, ud)
	after, _ := f.sync() // no error: a new spec is what helps, not a retry
	assert.Zero(t, after)
	got := f.ud()
	var provisioned *appsv1alpha1.UnitedDeploymentCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == appsv1alpha1.SubsetProvisioned {
			provisioned = &got.Status.Conditions[i]
		}
	}
	require.NotNil(t, provisioned)
	assert.Equal(t, corev1.ConditionFalse, provisioned.Status)
	assert.Contains(t, provisioned.Message, "subset a")
	assert.Len(t, f.cloneSets(), 2, "the other subsets are made")
	assert.Contains(t, <-f.recorder.Events, "FailedCreateSubset")

	_, writes := f.sync()
	assert.Empty(t, writes, "the status already says so")
}

func TestSyncRefusedCreateIsRetriedWithBackoff(t *testing.T) {
	f := newFixture(t, newUD(kindDeployment, 3))
	f.kube.PrependReactor("create", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("quota exceeded")
	})
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, ns+"/web")
	assert.ErrorContains(t, err, "quota exceeded")
	f.settle()
	got := f.ud()
	found := false
	for _, c := range got.Status.Conditions {
		if c.Type == appsv1alpha1.SubsetProvisioned {
			found = c.Status == corev1.ConditionFalse
		}
	}
	assert.True(t, found)
}

func TestSyncAdaptiveMovesReplicasAndRecovers(t *testing.T) {
	ud := newUD(kindCloneSet, 6)
	ud.Spec.Topology.ScheduleStrategy = appsv1alpha1.UnitedDeploymentScheduleStrategy{
		Type: appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{
			RescheduleCriticalSeconds: ptr.To[int32](10), UnschedulableDuration: ptr.To[int32](60)},
	}
	ud.Spec.Topology.Subsets[0].MaxReplicas = ptr.To(intstrOf(2))
	ud.Spec.Topology.Subsets[1].MaxReplicas = ptr.To(intstrOf(2))
	f := newFixture(t, ud)
	after, _ := f.sync()
	assert.Equal(t, 10*time.Second, after, "new pods: look again when they may be stuck")
	f.runCloneSets("")
	// Subset a's pods cannot be scheduled.
	ctx := context.Background()
	pods, _ := f.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		if p.Labels[appsv1alpha1.SubSetNameLabelKey] != "a" {
			continue
		}
		p.Spec.NodeName = ""
		p.CreationTimestamp = metav1.NewTime(now)
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
		_, err := f.kube.CoreV1().Pods(ns).Update(ctx, &p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	cs := f.cloneSets()["a"]
	cs.Status.ReadyReplicas = 0
	_, err := f.kruise.AppsV1beta1().CloneSets(ns).UpdateStatus(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.settle()

	after, writes := f.sync()
	assert.Equal(t, 10*time.Second, after, "the stuck pods reach rescheduleCriticalSeconds then")
	assert.Equal(t, []string{"update uniteddeployments/status"}, verbs(writes), "nothing moves before")

	f.clock.Step(11 * time.Second)
	after, _ = f.sync()
	assert.Equal(t, 10*time.Second, after, "c grew: look again when its new pods may be stuck (the recovery, at 60s, is later)")
	sets := f.cloneSets()
	assert.Equal(t, int32(0), *sets["a"].Spec.Replicas)
	assert.Equal(t, int32(2), *sets["b"].Spec.Replicas)
	assert.Equal(t, int32(4), *sets["c"].Spec.Replicas)
	cond := f.ud().Status.SubsetStatuses[0].GetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable)
	require.NotNil(t, cond)
	assert.Equal(t, corev1.ConditionFalse, cond.Status)
	assert.Equal(t, "reschedule", cond.Reason)

	f.runCloneSets("")
	f.clock.Step(61 * time.Second)
	f.sync()
	cond = f.ud().Status.SubsetStatuses[0].GetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable)
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
	assert.Equal(t, "recover", cond.Reason)
	// Recovered, but the ready pods of c are not squeezed back out.
	sets = f.cloneSets()
	assert.Equal(t, int32(0), *sets["a"].Spec.Replicas)
	assert.Equal(t, int32(4), *sets["c"].Spec.Replicas)
}

func TestSyncReservingLabelsPodsAndNarrowsTheScaleSelector(t *testing.T) {
	ud := newUD(kindCloneSet, 4)
	ud.Spec.Topology.Subsets = ud.Spec.Topology.Subsets[:2]
	ud.Spec.Topology.Subsets[0].MaxReplicas = ptr.To(intstrOf(4))
	ud.Spec.Topology.ScheduleStrategy = appsv1alpha1.UnitedDeploymentScheduleStrategy{
		Type: appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{ReserveUnschedulablePods: true,
			RescheduleCriticalSeconds: ptr.To[int32](10), UnschedulableDuration: ptr.To[int32](60)},
	}
	f := newFixture(t, ud)
	f.sync()
	f.runCloneSets("")
	ctx := context.Background()
	pods, _ := f.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		p.Spec.NodeName = ""
		p.CreationTimestamp = metav1.NewTime(now)
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
		_, err := f.kube.CoreV1().Pods(ns).Update(ctx, &p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	for _, cs := range f.cloneSets() {
		cs.Status.ReadyReplicas = 0
		_, err := f.kruise.AppsV1beta1().CloneSets(ns).UpdateStatus(ctx, cs, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	f.settle()
	f.clock.Step(11 * time.Second)
	f.sync()
	got := f.ud()
	assert.Equal(t, "app=web,"+appsv1alpha1.UnitedDeploymentReservedPodLabel+"=false", got.Status.LabelSelector)
	assert.Equal(t, int32(4), got.Status.ReservedPods)
	assert.Equal(t, int32(0), got.Status.Replicas, "reserved pods are not counted")
	sets := f.cloneSets()
	assert.Equal(t, int32(4), *sets["a"].Spec.Replicas, "reserved pods stay")
	assert.Equal(t, int32(4), *sets["b"].Spec.Replicas, "and are made again in b")
	pods, _ = f.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		assert.Equal(t, "true", p.Labels[appsv1alpha1.UnitedDeploymentReservedPodLabel], p.Name)
	}
	// The unschedulable subset's update may take down what will never be Ready: replicas - ready.
	assert.Equal(t, ptr.To(intstr.FromInt32(4)), sets["a"].Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)
	assert.Nil(t, sets["b"].Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, "schedulable subsets keep the template's")
	_, writes := f.sync()
	for _, w := range writes {
		assert.NotEqual(t, "clonesets", w.GetResource().Resource, "written once, not every reconcile")
	}
}

// A template whose metadata names no labels (OpenKruise's CloneSet examples): its revision still
// carries the selector's labels, so the next reconcile finds it instead of releasing it.
func TestSyncRevisionWithoutTemplateLabelsIsKept(t *testing.T) {
	ud := newUD(kindCloneSet, 3)
	ud.Spec.Template.CloneSetTemplate.Labels = nil
	f := newFixture(t, ud)
	f.sync()
	f.runCloneSets("")
	f.sync()
	_, writes := f.sync()
	assert.Empty(t, writes)
	revs, err := f.kube.AppsV1().ControllerRevisions(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, revs.Items, 1)
	assert.Equal(t, "web", metav1.GetControllerOf(&revs.Items[0]).Name)
	assert.Equal(t, "web", revs.Items[0].Labels["app"])
}
