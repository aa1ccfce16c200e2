package statefulset

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const testNS = "default"

func statefulSet(replicas int32, image string, mods ...gen.StatefulSetModifier) *appsv1beta1.StatefulSet {
	base := []gen.StatefulSetModifier{
		gen.SetStatefulSetNamespace(testNS), gen.SetStatefulSetUID("set-uid"), gen.SetStatefulSetGeneration(2),
		gen.SetStatefulSetReplicas(replicas),
		gen.SetStatefulSetServiceName("web"),
		gen.SetStatefulSetSelector(map[string]string{"app": "web"}),
		gen.SetStatefulSetTemplate(gen.PodTemplate(gen.AddPodLabels(map[string]string{"app": "web"}),
			gen.AddPodContainer(gen.Container("main", gen.SetContainerImage(image))))),
		gen.SetStatefulSetUpdateStrategy(appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}),
	}
	return gen.StatefulSet("web", append(base, mods...)...)
}

func withClaims(set *appsv1beta1.StatefulSet) {
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}}
}

func inPlace(set *appsv1beta1.StatefulSet) {
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType}
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
}

func revisionOf(t *testing.T, set *appsv1beta1.StatefulSet, number int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := revision.PatchData(set.Spec.Template, revision.TemplatePath...)
	require.NoError(t, err)
	sel, _ := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	return revision.NewRevision(revision.Owner{Object: set, Kind: controllerKind, Selector: sel},
		revision.Content{Data: data, Labels: set.Spec.Template.Labels}, number, nil)
}

// runningPod is the healthy pod of ordinal, made by the controller at rev.
func runningPod(t *testing.T, set *appsv1beta1.StatefulSet, rev *appsv1.ControllerRevision, ordinal int) *corev1.Pod {
	t.Helper()
	tmpl := &corev1.PodTemplateSpec{}
	require.NoError(t, revision.DecodeData(rev.Data.Raw, tmpl, revision.TemplatePath...))
	r := PodRecipe{Owner: *metav1.NewControllerRef(set, controllerKind), Namespace: testNS, Set: set.Name, ServiceName: set.Spec.ServiceName,
		Template: tmpl, ClaimTemplates: set.Spec.VolumeClaimTemplates, Revision: rev.Name}
	pod := NewPod(r, ordinal, t0.Add(-time.Hour))
	pod.UID = types.UID("uid-" + pod.Name)
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
	pod.Spec.NodeName = "vm"
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
	if len(tmpl.Spec.ReadinessGates) > 0 {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue})
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true, ContainerID: "containerd://" + pod.Name,
		Image: tmpl.Spec.Containers[0].Image, ImageID: "sha-" + pod.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return pod
}

type fixture struct {
	t        *testing.T
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	set      *appsv1beta1.StatefulSet
}

func newFixture(t *testing.T, set *appsv1beta1.StatefulSet, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, fixtureExtras{}, set, objs...)
}

// fixtureExtras are what some tests add to a fixture: pre-download on, with jobs in the cache.
type fixtureExtras struct {
	preDownload bool
	jobs        []*appsv1beta1.ImagePullJob
	// resize is Config.Resize.
	resize *inplace.ResizeSupport
	// budget is Config.Budget.
	budget budgetwait.Check
}

func newFixtureWith(t *testing.T, extras fixtureExtras, set *appsv1beta1.StatefulSet, objs ...runtime.Object) *fixture {
	t.Helper()
	kube := fake.NewClientset(objs...)
	kruiseObjs := []runtime.Object{set}
	for _, j := range extras.jobs {
		kruiseObjs = append(kruiseObjs, j)
	}
	kruise := kruisefake.NewSimpleClientset(kruiseObjs...)
	inf := informers.NewSharedInformerFactory(kube, 0)
	kinf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	rec := record.NewFakeRecorder(100)
	cfg := Config{
		Config:       ctrlbase.Config{Client: kube, KruiseClient: kruise, Recorder: rec, Clock: clocktesting.NewFakeClock(t0)},
		StatefulSets: kinf.Apps().V1beta1().StatefulSets(),
		Pods:         inf.Core().V1().Pods(),
		Claims:       inf.Core().V1().PersistentVolumeClaims(),
		Revisions:    inf.Apps().V1().ControllerRevisions(),
		Resize:       extras.resize,
		Budget:       extras.budget,
	}
	if extras.preDownload {
		cfg.PreDownloadImages, cfg.ImagePullJobs = true, kinf.Apps().V1beta1().ImagePullJobs()
	}
	ctrl, err := New(cfg)
	require.NoError(t, err)
	for _, j := range extras.jobs {
		require.NoError(t, kinf.Apps().V1beta1().ImagePullJobs().Informer().GetIndexer().Add(j))
	}
	require.NoError(t, kinf.Apps().V1beta1().StatefulSets().Informer().GetIndexer().Add(set))
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Pod:
			require.NoError(t, inf.Core().V1().Pods().Informer().GetIndexer().Add(v))
		case *corev1.PersistentVolumeClaim:
			require.NoError(t, inf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(v))
		case *appsv1.ControllerRevision:
			require.NoError(t, inf.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(v))
		}
	}
	kube.ClearActions()
	kruise.ClearActions()
	return &fixture{t: t, ctrl: ctrl, kube: kube, kruise: kruise, recorder: rec, set: set}
}

func testContext(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

func metav1LabelSelector(k, v string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func intstrPercent(s string) intstr.IntOrString { return intstr.FromString(s) }

func (f *fixture) sync() {
	f.t.Helper()
	_, err := f.ctrl.sync(testContext(f.t), testNS+"/"+f.set.Name)
	require.NoError(f.t, err)
}

// writes lists the kube client's writes as "verb resource[/sub] name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		verb := a.GetVerb()
		if verb == "get" || verb == "list" || verb == "watch" {
			continue
		}
		res := a.GetResource().Resource
		if res == "controllerrevisions" {
			continue
		}
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch v := a.(type) {
		case k8stesting.CreateAction:
			name = v.GetObject().(metav1.Object).GetName()
		case k8stesting.UpdateAction:
			name = v.GetObject().(metav1.Object).GetName()
		case k8stesting.DeleteAction:
			name = v.GetName()
		case k8stesting.PatchAction:
			name = v.GetName()
		}
		out = append(out, verb+" "+res+" "+name)
	}
	return out
}

func (f *fixture) status() appsv1beta1.StatefulSetStatus {
	set, err := f.kruise.AppsV1beta1().StatefulSets(testNS).Get(context.Background(), f.set.Name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return set.Status
}

func (f *fixture) events() string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func TestOrderedCreatesOrdinalZeroWithItsClaimFirst(t *testing.T) {
	set := statefulSet(3, "app:1", withClaims, func(s *appsv1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	})
	f := newFixture(t, set)
	f.sync()
	w := f.writes()
	require.Contains(t, w, "create persistentvolumeclaims data-web-0")
	require.Contains(t, w, "create pods web-0")
	assert.NotContains(t, strings.Join(w, ","), "web-1", "OrderedReady creates one pod at a time")
	claimAt, podAt := -1, -1
	for i, s := range w {
		if s == "create persistentvolumeclaims data-web-0" {
			claimAt = i
		}
		if s == "create pods web-0" {
			podAt = i
		}
	}
	assert.Less(t, claimAt, podAt, "the PVC before the pod")

	claim, err := f.kube.CoreV1().PersistentVolumeClaims(testNS).Get(context.Background(), "data-web-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, claim.OwnerReferences, 1, "whenDeleted=Delete: the set owns the PVC")
	assert.Equal(t, types.UID("set-uid"), claim.OwnerReferences[0].UID)
	assert.Equal(t, "web", claim.Labels["app"])

	pod, err := f.kube.CoreV1().Pods(testNS).Get(context.Background(), "web-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "web-0", pod.Spec.Hostname)
	assert.Equal(t, "web", pod.Spec.Subdomain)
	assert.Equal(t, "0", pod.Labels[PodIndexLabel])
	st := f.status()
	assert.Equal(t, pod.Labels[appsv1.ControllerRevisionHashLabelKey], st.UpdateRevision)
	assert.Equal(t, "app=web", st.LabelSelector)
	assert.Equal(t, int64(2), st.ObservedGeneration)
	assert.Contains(t, f.events(), "create Pod web-0 in StatefulSet web successful")

	// The cache has not seen web-0: nothing more is created (expectations).
	f.kube.ClearActions()
	f.sync()
	assert.Empty(t, f.writes())
}

func TestParallelCreatesAllAndStartOrdinal(t *testing.T) {
	set := statefulSet(3, "app:1", func(s *appsv1beta1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 3}
	})
	f := newFixture(t, set)
	f.sync()
	assert.ElementsMatch(t, []string{"create pods web-3", "create pods web-4", "create pods web-5"}, f.writes())
}

func TestStartOrdinalGateOffNumbersFromZero(t *testing.T) {
	set := statefulSet(2, "app:1", func(s *appsv1beta1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 3}
	})
	f := newFixture(t, set)
	f.ctrl.ignoreOrdinalsStart = true
	f.sync()
	assert.ElementsMatch(t, []string{"create pods web-0", "create pods web-1"}, f.writes())
}

func TestAutoDeletePVCGateOffLeavesClaimOwnersAlone(t *testing.T) {
	set := statefulSet(1, "app:1", withClaims, func(s *appsv1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
	})
	rev := revisionOf(t, set, 1)
	objs := []runtime.Object{rev}
	for o := 0; o < 2; o++ {
		objs = append(objs, runningPod(t, set, rev, o),
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: ClaimName("data", "web", o), Namespace: testNS, ResourceVersion: "1"}})
	}
	f := newFixture(t, set, objs...)
	f.ctrl.ignoreClaimRetention = true
	f.sync()
	w := f.writes()
	assert.Contains(t, w, "delete pods web-1", "scaling in goes on")
	for _, write := range w {
		assert.NotContains(t, write, "persistentvolumeclaims", "no PVC is re-owned with the gate off")
	}
}

func TestScaleDownWithWhenScaledDeleteHandsThePVCToThePod(t *testing.T) {
	set := statefulSet(1, "app:1", withClaims, func(s *appsv1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	})
	rev := revisionOf(t, set, 1)
	objs := []runtime.Object{rev}
	for o := 0; o < 3; o++ {
		objs = append(objs, runningPod(t, set, rev, o),
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: ClaimName("data", "web", o), Namespace: testNS, ResourceVersion: "1"}})
	}
	objs = append(objs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other-web-2", Namespace: testNS}})
	f := newFixture(t, set, objs...)
	f.sync()
	w := f.writes()
	assert.Contains(t, w, "patch persistentvolumeclaims data-web-2")
	assert.Contains(t, w, "patch persistentvolumeclaims data-web-1")
	assert.NotContains(t, w, "patch persistentvolumeclaims data-web-0", "a wanted ordinal's PVC keeps no pod owner")
	assert.NotContains(t, w, "patch persistentvolumeclaims other-web-2", "only PVCs from the templates")
	assert.Contains(t, w, "delete pods web-2")
	assert.NotContains(t, w, "delete pods web-1", "one at a time, highest first")
	claim, err := f.kube.CoreV1().PersistentVolumeClaims(testNS).Get(context.Background(), "data-web-2", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, claim.OwnerReferences, 1)
	assert.Equal(t, "Pod", claim.OwnerReferences[0].Kind)
	assert.Equal(t, types.UID("uid-web-2"), claim.OwnerReferences[0].UID)
}

func TestFailedPodIsRecreated(t *testing.T) {
	set := statefulSet(2, "app:1")
	rev := revisionOf(t, set, 1)
	bad := runningPod(t, set, rev, 1)
	bad.Status.Phase = corev1.PodFailed
	f := newFixture(t, set, rev, runningPod(t, set, rev, 0), bad)
	f.sync()
	assert.Equal(t, []string{"delete pods web-1"}, f.writes())
	assert.Contains(t, f.events(), "RecreatingFailedPod")
}

func TestRollingUpdateRecreatesTheHighestOrdinal(t *testing.T) {
	old := statefulSet(3, "app:1")
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(3, "app:2")
	set.Status.CurrentRevision = oldRev.Name
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), runningPod(t, set, oldRev, 1), runningPod(t, set, oldRev, 2))
	f.sync()
	assert.Contains(t, f.writes(), "delete pods web-2")
	assert.NotContains(t, f.writes(), "delete pods web-1")
	st := f.status()
	assert.Equal(t, oldRev.Name, st.CurrentRevision)
	assert.NotEqual(t, oldRev.Name, st.UpdateRevision)
	assert.Equal(t, int32(3), st.CurrentReplicas)
	assert.Equal(t, int32(0), st.UpdatedReplicas)
}

func TestPartitionHoldsTheLowestPods(t *testing.T) {
	old := statefulSet(3, "app:1")
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(3, "app:2", func(s *appsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}
	})
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), runningPod(t, set, oldRev, 1), runningPod(t, set, oldRev, 2))
	f.sync()
	for _, w := range f.writes() {
		assert.NotContains(t, w, "pods", "partition 3 of 3: no pod is updated")
	}
}

func TestInPlaceUpdateKeepsThePod(t *testing.T) {
	old := statefulSet(2, "app:1", inPlace)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(2, "app:2", inPlace)
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), runningPod(t, set, oldRev, 1))
	f.sync()
	var updated []string
	for _, a := range f.kube.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "" {
			p := u.GetObject().(*corev1.Pod)
			assert.Equal(t, "app:2", p.Spec.Containers[0].Image)
			assert.Equal(t, string(pub.LifecycleStateUpdating), p.Labels[pub.LifecycleStateKey])
			updated = append(updated, p.Name)
		}
		assert.NotEqual(t, "delete", a.GetVerb(), "an in-place update deletes nothing")
	}
	assert.Equal(t, []string{"web-1"}, updated)
	assert.Contains(t, f.events(), "SuccessfulUpdatePodInPlace")
}

func TestInPlaceWithoutTheGateFallsBackToRecreate(t *testing.T) {
	noGate := func(s *appsv1beta1.StatefulSet) { s.Spec.Template.Spec.ReadinessGates = nil }
	old := statefulSet(1, "app:1", inPlace, noGate)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(1, "app:2", inPlace, noGate)
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0))
	f.sync()
	assert.Equal(t, []string{"delete pods web-0"}, f.writes())
	assert.Contains(t, f.events(), ReasonInPlaceGateMissing)
}

func TestSpecifiedDeleteGoesWithoutAnUpdate(t *testing.T) {
	set := statefulSet(2, "app:1", func(s *appsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy = appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	})
	rev := revisionOf(t, set, 1)
	f := newFixture(t, set, rev, specifiedDelete(runningPod(t, set, rev, 0)), runningPod(t, set, rev, 1))
	f.sync()
	assert.Equal(t, []string{"delete pods web-0"}, f.writes())
}

func TestPreDeleteHookHoldsAScaledInPod(t *testing.T) {
	hook := &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	set := statefulSet(1, "app:1", func(s *appsv1beta1.StatefulSet) { s.Spec.Lifecycle = hook })
	rev := revisionOf(t, set, 1)
	held := runningPod(t, set, rev, 1)
	held.Labels["hold"] = "true"
	f := newFixture(t, set, rev, runningPod(t, set, rev, 0), held)
	f.sync()
	assert.Equal(t, []string{"patch pods web-1"}, f.writes(), "PreparingDelete, not deleted")
	pod, err := f.kube.CoreV1().Pods(testNS).Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(pub.LifecycleStatePreparingDelete), pod.Labels[pub.LifecycleStateKey])
}

func TestAdoptsAnOrphanAndCountsStatus(t *testing.T) {
	set := statefulSet(2, "app:1")
	rev := revisionOf(t, set, 1)
	orphan := runningPod(t, set, rev, 1)
	orphan.OwnerReferences = nil
	f := newFixture(t, set, rev, runningPod(t, set, rev, 0), orphan)
	f.sync()
	assert.Contains(t, f.writes(), "patch pods web-1")
	st := f.status()
	assert.Equal(t, int32(2), st.Replicas)
	assert.Equal(t, int32(2), st.ReadyReplicas)
	assert.Equal(t, int32(2), st.AvailableReplicas)
	assert.Equal(t, int32(2), st.UpdatedReplicas)
	assert.Equal(t, int32(2), st.CurrentReplicas)
	assert.Equal(t, rev.Name, st.CurrentRevision)
	assert.Equal(t, rev.Name, st.UpdateRevision)
}

// unorderedSet is a Parallel set of replicas at image with unorderedUpdate (pods labelled k=v
// go first) and the partition given.
func unorderedSet(replicas int32, image string, part int32) *appsv1beta1.StatefulSet {
	return statefulSet(replicas, image, func(s *appsv1beta1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{
			Partition: ptr.To(part), MaxUnavailable: ptr.To(intstr.FromInt32(replicas)),
			UnorderedUpdate: &appsv1beta1.UnorderedUpdateStrategy{PriorityStrategy: &pub.UpdatePriorityStrategy{
				WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}}},
			}},
		}
	})
}

// With unorderedUpdate the partition counts pods, as OpenKruise's: the pods the priority puts
// first are updated whatever their ordinals.
func TestUnorderedPartitionFollowsThePriority(t *testing.T) {
	oldRev := revisionOf(t, unorderedSet(4, "app:1", 2), 1)
	set := unorderedSet(4, "app:2", 2)
	set.Status.CurrentRevision = oldRev.Name
	pods := []runtime.Object{oldRev}
	for o := range 4 {
		pod := runningPod(t, set, oldRev, o)
		if o == 0 {
			pod.Labels["k"] = "v"
		}
		pods = append(pods, pod)
	}
	f := newFixture(t, set, pods...)
	f.sync()
	assert.ElementsMatch(t, []string{"delete pods web-0", "delete pods web-3"}, f.writes(), "partition 2 of 4: the labelled pod, then the highest")
}

// With unorderedUpdate a new pod is created at the current revision while fewer than partition
// pods are not updated, wherever its ordinal.
func TestUnorderedPartitionCreatesByCount(t *testing.T) {
	oldRev := revisionOf(t, unorderedSet(4, "app:1", 2), 1)
	set := unorderedSet(4, "app:2", 2)
	set.Status.CurrentRevision = oldRev.Name
	newRev := revisionOf(t, set, 2)
	f := newFixture(t, set, oldRev, newRev, runningPod(t, set, newRev, 0), runningPod(t, set, oldRev, 1))
	f.sync()
	assert.Equal(t, map[string]string{"web-2": oldRev.Name, "web-3": newRev.Name}, f.createdPods(),
		"one pod not updated of partition 2: one more at the current revision, then the update revision")
}
