package daemonset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

func daemonSet(image string, mods ...gen.DaemonSetModifier) *appsv1beta1.DaemonSet {
	base := []gen.DaemonSetModifier{
		gen.SetDaemonSetNamespace(testNS), gen.SetDaemonSetUID("ds-uid"), gen.SetDaemonSetGeneration(1),
		gen.SetDaemonSetSelector(map[string]string{"app": "agent"}),
		gen.SetDaemonSetTemplate(gen.PodTemplate(gen.AddPodLabels(map[string]string{"app": "agent"}),
			gen.AddPodContainer(gen.Container("main", gen.SetContainerImage(image))))),
		gen.SetDaemonSetUpdateStrategy(appsv1beta1.DaemonSetUpdateStrategy{
			Type:          appsv1beta1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.StandardDaemonSetRollingUpdateType},
		}),
	}
	return gen.DaemonSet("agent", append(base, mods...)...)
}

func revisionOf(t *testing.T, ds *appsv1beta1.DaemonSet, number int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := revision.PatchData(ds.Spec.Template, revision.TemplatePath...)
	require.NoError(t, err)
	sel, _ := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	return revision.NewRevision(revision.Owner{Object: ds, Kind: controllerKind, Selector: sel},
		revision.Content{Data: data, Labels: ds.Spec.Template.Labels}, number, nil)
}

// runningPod is a ready pod of ds at rev on node, made as the controller makes them.
func runningPod(t *testing.T, ds *appsv1beta1.DaemonSet, rev *appsv1.ControllerRevision, node string) *corev1.Pod {
	t.Helper()
	tmpl := &corev1.PodTemplateSpec{}
	require.NoError(t, revision.DecodeData(rev.Data.Raw, tmpl, revision.TemplatePath...))
	pod := NewPod(PodRecipe{DaemonSet: ds, Template: tmpl, Hash: revisionHash(rev.Name, rev.Labels)}, node)
	pod.Name = "agent-" + node
	pod.UID = "uid-" + "agent-" + "node"
	pod.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	pod.Spec.NodeName = node
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true, ContainerID: "containerd://" + node,
		Image: tmpl.Spec.Containers[0].Image, ImageID: "sha-" + node, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return pod
}

type fixture struct {
	t        *testing.T
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	ds       *appsv1beta1.DaemonSet
}

func newFixture(t *testing.T, ds *appsv1beta1.DaemonSet, nodes []*corev1.Node, revs []*appsv1.ControllerRevision, pods ...*corev1.Pod) *fixture {
	t.Helper()
	return newFixtureWith(t, fixtureExtras{}, ds, nodes, revs, pods...)
}

// fixtureExtras are what some tests add to a fixture: pre-download on, with jobs in the cache.
type fixtureExtras struct {
	preDownload bool
	jobs        []*appsv1beta1.ImagePullJob
	// budget is Config.Budget.
	budget budgetwait.Check
	// resize is Config.Resize.
	resize *inplace.ResizeSupport
}

func newFixtureWith(t *testing.T, extras fixtureExtras, ds *appsv1beta1.DaemonSet, nodes []*corev1.Node, revs []*appsv1.ControllerRevision, pods ...*corev1.Pod) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, r := range revs {
		objs = append(objs, r)
	}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	kube := fake.NewClientset(objs...)
	kruiseObjs := []runtime.Object{ds}
	for _, j := range extras.jobs {
		kruiseObjs = append(kruiseObjs, j)
	}
	kruise := kruisefake.NewSimpleClientset(kruiseObjs...)
	inf := informers.NewSharedInformerFactory(kube, 0)
	kinf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	rec := record.NewFakeRecorder(100)
	cfg := Config{
		Config:     ctrlbase.Config{Client: kube, KruiseClient: kruise, Recorder: rec, Clock: clocktesting.NewFakeClock(t0)},
		DaemonSets: kinf.Apps().V1beta1().DaemonSets(),
		Pods:       inf.Core().V1().Pods(),
		Nodes:      inf.Core().V1().Nodes(),
		Revisions:  inf.Apps().V1().ControllerRevisions(),
		Budget:     extras.budget,
		Resize:     extras.resize,
	}
	if extras.preDownload {
		cfg.PreDownloadImages, cfg.ImagePullJobs = true, kinf.Apps().V1beta1().ImagePullJobs()
	}
	ctrl, err := New(cfg)
	require.NoError(t, err)
	for _, j := range extras.jobs {
		require.NoError(t, kinf.Apps().V1beta1().ImagePullJobs().Informer().GetIndexer().Add(j))
	}
	require.NoError(t, kinf.Apps().V1beta1().DaemonSets().Informer().GetIndexer().Add(ds))
	for _, p := range pods {
		require.NoError(t, inf.Core().V1().Pods().Informer().GetIndexer().Add(p))
	}
	for _, r := range revs {
		require.NoError(t, inf.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(r))
	}
	for _, n := range nodes {
		require.NoError(t, inf.Core().V1().Nodes().Informer().GetIndexer().Add(n))
	}
	kube.ClearActions()
	return &fixture{t: t, ctrl: ctrl, kube: kube, kruise: kruise, recorder: rec, ds: ds}
}

func (f *fixture) sync() time.Duration {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	after, err := f.ctrl.sync(ctx, testNS+"/"+f.ds.Name)
	require.NoError(f.t, err)
	return after
}

// writes lists the kube client's pod writes as verb and name (subresource after a slash).
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource != "pods" || a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		name := ""
		switch a := a.(type) {
		case k8stesting.CreateAction:
			if a.GetVerb() == "update" {
				name = a.GetObject().(*corev1.Pod).Name
				break
			}
			name = a.GetObject().(*corev1.Pod).Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
		case k8stesting.DeleteAction:
			name = a.GetName()
		case k8stesting.PatchAction:
			name = a.GetName()
		}
		verb := a.GetVerb()
		if a.GetSubresource() != "" {
			verb += "/" + a.GetSubresource()
		}
		out = append(out, verb+" "+name)
	}
	return out
}

func (f *fixture) status() appsv1beta1.DaemonSetStatus {
	ds, err := f.kruise.AppsV1beta1().DaemonSets(testNS).Get(context.Background(), f.ds.Name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return ds.Status
}

func TestCreatesAPodOnEveryEligibleNodeOnce(t *testing.T) {
	ds := daemonSet("agent:1", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"}
	})
	worker := func(name string) *corev1.Node { return gen.Node(name, gen.AddNodeLabel("role", "worker")) }
	tainted := worker("c")
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	f := newFixture(t, ds, []*corev1.Node{worker("a"), worker("b"), tainted, gen.Node("d")}, nil)
	f.sync()
	assert.ElementsMatch(t, []string{"create a", "create b"}, f.writes())

	pods, err := f.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 2)
	revs, _ := f.kube.AppsV1().ControllerRevisions(testNS).List(context.Background(), metav1.ListOptions{})
	require.Len(t, revs.Items, 1)
	hash := revs.Items[0].Labels[revision.HashLabel]
	for _, p := range pods.Items {
		assert.Equal(t, hash, p.Labels[appsv1.ControllerRevisionHashLabelKey], "pods carry the hash, as the built-in DaemonSet's")
		assert.Len(t, p.Spec.Tolerations, 6)
		assert.Equal(t, "agent-", p.GenerateName)
		assert.Equal(t, controllerKind.Kind, p.OwnerReferences[0].Kind)
		assert.Empty(t, p.Spec.ReadinessGates, "Standard: no InPlaceUpdateReady gate")
	}
	st := f.status()
	assert.Equal(t, int32(2), st.DesiredNumberScheduled)
	assert.Equal(t, int32(0), st.CurrentNumberScheduled)
	assert.Equal(t, int32(2), st.NumberUnavailable)
	assert.Equal(t, hash, st.UpdateRevision)
	assert.Equal(t, int64(1), st.ObservedGeneration)

	f.kube.ClearActions()
	f.sync()
	assert.Empty(t, f.writes(), "the cache has not shown the pods: nothing created twice")
}

func TestBurstReplicasCapsCreations(t *testing.T) {
	ds := daemonSet("agent:1", func(ds *appsv1beta1.DaemonSet) { ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(2)) })
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a"), gen.Node("b"), gen.Node("c"), gen.Node("d")}, nil)
	f.sync()
	assert.Len(t, f.writes(), 2)
}

func TestDeletesWhatShouldNotRun(t *testing.T) {
	ds := daemonSet("agent:1")
	rev := revisionOf(t, ds, 1)
	evicting := gen.Node("b")
	evicting.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}
	ok := runningPod(t, ds, rev, "a")
	onTainted := runningPod(t, ds, rev, "b")
	onGone := runningPod(t, ds, rev, "gone")
	failed := runningPod(t, ds, rev, "c")
	failed.Status.Phase = corev1.PodFailed
	surplus := runningPod(t, ds, rev, "a")
	surplus.Name, surplus.CreationTimestamp = "agent-a-2", metav1.NewTime(t0)
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a"), evicting, gen.Node("c")}, []*appsv1.ControllerRevision{rev}, ok, onTainted, onGone, failed, surplus)
	f.sync()
	assert.ElementsMatch(t, []string{"delete agent-b", "delete agent-gone", "delete agent-c", "delete agent-a-2"}, f.writes())
	assert.Contains(t, drain(f.recorder), "Warning FailedDaemonPod Found Failed daemon pod agent-c on node c, will try to kill it")
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestRollingUpdate(t *testing.T) {
	old := daemonSet("agent:1")
	oldRev := revisionOf(t, old, 1)
	tests := []struct {
		name string
		mod  func(*appsv1beta1.DaemonSet)
		want []string
	}{
		{"Standard: one node at a time, the last by name first", func(*appsv1beta1.DaemonSet) {}, []string{"delete agent-c"}},
		{"maxUnavailable 2", func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		}, []string{"delete agent-c", "delete agent-b"}},
		{"maxSurge 1: a new pod beside the old one", func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
		}, []string{"create c"}},
		{"partition 2 of 3: only the last node", func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(3))
		}, []string{"delete agent-c"}},
		{"partition 100%: nothing", func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromString("100%"))
		}, nil},
		{"selector: only matching nodes", func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}, []string{"delete agent-a"}},
		{"paused", func(ds *appsv1beta1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Paused = ptr.To(true) }, nil},
		{"OnDelete", func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.Type = appsv1beta1.OnDeleteDaemonSetStrategyType
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := daemonSet("agent:2", tt.mod)
			ds.Status.UpdateRevision = revisionHash(oldRev.Name, oldRev.Labels)
			nodes := []*corev1.Node{gen.Node("a", gen.AddNodeLabel("canary", "true")), gen.Node("b"), gen.Node("c")}
			pods := []*corev1.Pod{runningPod(t, old, oldRev, "a"), runningPod(t, old, oldRev, "b"), runningPod(t, old, oldRev, "c")}
			f := newFixture(t, ds, nodes, []*appsv1.ControllerRevision{oldRev}, pods...)
			f.sync()
			assert.ElementsMatch(t, tt.want, f.writes())
			assert.Equal(t, int32(0), f.status().UpdatedNumberScheduled)
		})
	}
}

func TestInPlaceIfPossible(t *testing.T) {
	inPlace := func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType
	}
	old := daemonSet("agent:1", inPlace)
	oldRev := revisionOf(t, old, 1)

	t.Run("new pods carry the InPlaceUpdateReady gate", func(t *testing.T) {
		f := newFixture(t, old, []*corev1.Node{gen.Node("a")}, nil)
		f.sync()
		pods, _ := f.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
		require.Len(t, pods.Items, 1)
		assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}, pods.Items[0].Spec.ReadinessGates)
	})
	t.Run("an image change is applied in place", func(t *testing.T) {
		ds := daemonSet("agent:2", inPlace)
		f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, runningPod(t, old, oldRev, "a"))
		f.sync()
		assert.Equal(t, []string{"patch/status agent-a", "update agent-a"}, f.writes(), "InPlaceUpdateReady=False, then the image")
		pod, err := f.kube.CoreV1().Pods(testNS).Get(context.Background(), "agent-a", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "agent:2", pod.Spec.Containers[0].Image)
		st := f.status()
		assert.Equal(t, st.UpdateRevision, pod.Labels[appsv1.ControllerRevisionHashLabelKey])
		assert.Equal(t, []int32{1, 0, 0}, []int32{st.UpdatedNumberScheduled, st.NumberReady, st.NumberAvailable},
			"the status counts the pod as written: updated, not ready while its container restarts")
	})
	t.Run("a change that cannot be made in place recreates the pod", func(t *testing.T) {
		ds := daemonSet("agent:1", inPlace, func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
		})
		f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, runningPod(t, old, oldRev, "a"))
		f.sync()
		assert.Equal(t, []string{"delete agent-a"}, f.writes())
	})
}

// cpu and memory are resized in place through pods/resize, as a CloneSet's; where pods cannot
// be resized (gate InPlaceWorkloadVerticalScaling off: inplace.ResizeOff) the pod is recreated.
func TestInPlaceResize(t *testing.T) {
	sized := func(cpu string) func(*appsv1beta1.DaemonSet) {
		return func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType
			l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
			ds.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
		}
	}
	old := daemonSet("agent:1", sized("50m"))
	oldRev := revisionOf(t, old, 1)
	for name, tc := range map[string]struct {
		resize *inplace.ResizeSupport
		want   []string
	}{
		"resized in place": {want: []string{"patch/resize agent-a", "update agent-a"}},
		"gate off":         {resize: inplace.ResizeOff("gate off"), want: []string{"delete agent-a"}},
	} {
		t.Run(name, func(t *testing.T) {
			ds := daemonSet("agent:1", sized("80m"))
			f := newFixtureWith(t, fixtureExtras{resize: tc.resize}, ds, []*corev1.Node{gen.Node("a")},
				[]*appsv1.ControllerRevision{oldRev}, runningPod(t, old, oldRev, "a"))
			f.sync()
			assert.Equal(t, tc.want, f.writes())
		})
	}
}

func TestAdoptsOrphans(t *testing.T) {
	ds := daemonSet("agent:1")
	rev := revisionOf(t, ds, 1)
	orphan := runningPod(t, ds, rev, "a")
	orphan.OwnerReferences = nil
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{rev}, orphan)
	f.sync()
	assert.Equal(t, []string{"patch agent-a"}, f.writes(), "adopted; no second pod for the node")
	assert.Equal(t, int32(1), f.status().CurrentNumberScheduled)
}

func TestCountStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	nodes := []NodeState{
		node("a", run, dpod("a1", "a", "v2", ready)),
		node("b", run, dpod("b1", "b", "v1", ready), dpod("b2", "b", "v2", createdAt(5))),
		node("c", run, dpod("c1", "c", "v2")),
		node("d", run),
		node("e", keep, dpod("e1", "e", "v2", ready)),
		{Name: "gone", Gone: true, Pods: []*corev1.Pod{dpod("g1", "gone", "v2", ready)}},
	}
	s := CountStatus(nodes, "v2", 0, now)
	assert.Equal(t, appsv1beta1.DaemonSetStatus{DesiredNumberScheduled: 4, CurrentNumberScheduled: 3, NumberMisscheduled: 1,
		NumberReady: 2, NumberAvailable: 2, NumberUnavailable: 2, UpdatedNumberScheduled: 2}, s)
}

// A malformed update node selector, which the webhook admits as OpenKruise does, stops the
// rolling update with an InvalidSpec Event naming the field; nothing is deleted.
func TestMalformedUpdateSelectorIsAnsweredInAnEvent(t *testing.T) {
	old := daemonSet("agent:1")
	oldRev := revisionOf(t, old, 1)
	ds := daemonSet("agent:2", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}}
	})
	ds.Status.UpdateRevision = revisionHash(oldRev.Name, oldRev.Labels)
	f := newFixture(t, ds, []*corev1.Node{gen.Node("a")}, []*appsv1.ControllerRevision{oldRev}, runningPod(t, old, oldRev, "a"))
	f.sync()
	assert.Empty(t, f.writes())
	events := drain(f.recorder)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning InvalidSpec updateStrategy.rollingUpdate.selector:")
}
