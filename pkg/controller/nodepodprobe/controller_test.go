package nodepodprobe

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// fixture is the controller over a fake clientset holding the pods, with its caches filled by
// hand from the objects given.
type fixture struct {
	ctrl  *Controller
	kube  *fake.Clientset
	pods  cache.Indexer
	mks   cache.Indexer
	npps  cache.Indexer
	nodes cache.Indexer
}

type setup struct {
	pods       []*corev1.Pod
	markers    []*appsv1alpha1.PodProbeMarker
	npps       []*appsv1alpha1.NodePodProbe
	nodes      []*corev1.Node
	serverless bool
}

func newFixture(t *testing.T, s setup) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, p := range s.pods {
		objs = append(objs, p)
	}
	kube := fake.NewClientset(objs...)
	kruise := kruisefake.NewSimpleClientset()
	kf := informers.NewSharedInformerFactory(kube, 0)
	rf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	c, err := New(Config{
		Config:        ctrlbase.Config{Client: kube, KruiseClient: kruise, Recorder: record.NewFakeRecorder(10)},
		Pods:          kf.Core().V1().Pods(),
		Markers:       rf.Apps().V1alpha1().PodProbeMarkers(),
		NodePodProbes: rf.Apps().V1alpha1().NodePodProbes(),
		Nodes:         kf.Core().V1().Nodes(),
		Serverless:    s.serverless,
	})
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	f := &fixture{ctrl: c, kube: kube,
		pods: kf.Core().V1().Pods().Informer().GetIndexer(), mks: rf.Apps().V1alpha1().PodProbeMarkers().Informer().GetIndexer(),
		npps: rf.Apps().V1alpha1().NodePodProbes().Informer().GetIndexer(), nodes: kf.Core().V1().Nodes().Informer().GetIndexer()}
	for _, p := range s.pods {
		require.NoError(t, f.pods.Add(p))
	}
	for _, m := range s.markers {
		require.NoError(t, f.mks.Add(m))
	}
	for _, n := range s.npps {
		require.NoError(t, f.npps.Add(n))
	}
	for _, n := range s.nodes {
		require.NoError(t, f.nodes.Add(n))
	}
	return f
}

func (f *fixture) sync(t *testing.T, key string) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, key)
	require.NoError(t, err)
}

// refresh copies the pod from the fake API server into the cache, as the informer would.
func (f *fixture) refresh(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, f.pods.Update(p))
	return p
}

// patches are the pod patches sent, in order.
func (f *fixture) patches() []k8stesting.PatchAction {
	var out []k8stesting.PatchAction
	for _, a := range f.kube.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, pa)
		}
	}
	return out
}

// asJSON is v as JSON: times compare by value, whatever their location after a round trip.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// queued drains the queue.
func (f *fixture) queued() []string {
	var out []string
	for f.ctrl.queue.Len() > 0 {
		k, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(k)
		f.ctrl.queue.Forget(k)
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestSyncWritesThenNothing(t *testing.T) {
	f := newFixture(t, setup{
		pods:    []*corev1.Pod{pod()},
		markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
		npps:    []*appsv1alpha1.NodePodProbe{npp(entry(state("game#idle", succeeded, "exit 0", t0)))},
	})
	f.sync(t, "ns/web")

	ps := f.patches()
	require.Len(t, ps, 2, "one status patch, one metadata patch")
	assert.Equal(t, "status", ps[0].GetSubresource(), "conditions first")
	assert.Equal(t, "strategic-merge-patch+json", string(ps[0].GetPatchType())[len("application/"):])
	assert.Equal(t, "", ps[1].GetSubresource())
	assert.Equal(t, "application/merge-patch+json", string(ps[1].GetPatchType()))
	for _, p := range ps {
		var body struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(p.GetPatch(), &body))
		assert.Equal(t, podUID, body.Metadata.UID, "a pod recreated under the name is not patched")
	}

	got := f.refresh(t, "web")
	assert.Equal(t, "true", got.Labels["idle"])
	assert.Equal(t, "idle", got.Annotations["game.io/state"])
	assert.Equal(t, nodeprobe.EncodeMarks(map[string]nodeprobe.Marks{"game#idle": idleMarks}), got.Annotations[nodeprobe.MarksAnnotation])
	assert.JSONEq(t, asJSON(t, []corev1.PodCondition{ourCondition("game.io/idle", corev1.ConditionTrue, "exit 0", t0)}), asJSON(t, got.Status.Conditions))

	f.kube.ClearActions()
	f.sync(t, "ns/web")
	assert.Empty(t, f.kube.Actions(), "steady state: no write")
}

// The status patch sets a condition field by field (an empty message clears the old one) and
// removes another with "$patch": "delete", leaving the kubelet's conditions alone.
func TestSyncConditionsPatch(t *testing.T) {
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t0}
	start := pod(append(idleMarked(),
		gen.SetPodCondition(ready),
		gen.SetPodCondition(ourCondition("game.io/idle", corev1.ConditionTrue, "HTTP 200", t0)),
		gen.SetPodCondition(ourCondition("game.io/gone", corev1.ConditionTrue, "", t0)))...)
	f := newFixture(t, setup{
		pods:    []*corev1.Pod{start},
		markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
		npps:    []*appsv1alpha1.NodePodProbe{npp(entry(state("game#idle", failed, "", t1)))},
	})
	f.sync(t, "ns/web")
	got := f.refresh(t, "web")
	sort.Slice(got.Status.Conditions, func(i, j int) bool { return got.Status.Conditions[i].Type < got.Status.Conditions[j].Type })
	assert.JSONEq(t, asJSON(t, []corev1.PodCondition{ready, ourCondition("game.io/idle", corev1.ConditionFalse, "", t1)}), asJSON(t, got.Status.Conditions),
		"the message cleared, game.io/gone removed, Ready left alone (in any order)")
	assert.Equal(t, "false", got.Labels["idle"])
	assert.NotContains(t, got.Annotations, "game.io/state")
	assert.Equal(t, "yes", got.Annotations["game.io/busy"])

	f.kube.ClearActions()
	f.sync(t, "ns/web")
	assert.Empty(t, f.kube.Actions(), "steady state: no write")
}

// OpenKruise issue #2499: a pod with no labels and no annotations at all is marked.
func TestSyncPodWithoutMetadataMaps(t *testing.T) {
	bare := gen.Pod("web", gen.SetPodNamespace("ns"), gen.SetPodUID(podUID), gen.SetPodNodeName("node-a"), gen.SetPodPhase(corev1.PodRunning))
	f := newFixture(t, setup{pods: []*corev1.Pod{bare}})
	// Marks recorded in the cache (a pod whose labels were all removed since).
	cached := bare.DeepCopy()
	cached.Annotations = map[string]string{nodeprobe.MarksAnnotation: nodeprobe.EncodeMarks(map[string]nodeprobe.Marks{"game#idle": {Labels: []string{"idle"}}})}
	require.NoError(t, f.pods.Update(cached))
	f.sync(t, "ns/web")
	require.Len(t, f.patches(), 1)
	got := f.refresh(t, "web")
	assert.Empty(t, got.Labels)
	assert.Empty(t, got.Annotations)

	// And one that is selected gets labels and annotations onto nil maps.
	f = newFixture(t, setup{
		pods:    []*corev1.Pod{bare},
		markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
		npps:    []*appsv1alpha1.NodePodProbe{npp(entry(state("game#idle", succeeded, "", t0)))},
	})
	selected := bare.DeepCopy()
	selected.Labels = map[string]string{"app": "game"}
	require.NoError(t, f.pods.Update(selected))
	f.sync(t, "ns/web")
	got = f.refresh(t, "web")
	assert.Equal(t, "true", got.Labels["idle"])
	assert.Equal(t, "idle", got.Annotations["game.io/state"])
}

// Until the cache shows a write, the same plan for the same pod version is not sent again.
func TestSyncDoesNotRepeatAWriteTheCacheHasNotShown(t *testing.T) {
	f := newFixture(t, setup{
		pods:    []*corev1.Pod{pod()},
		markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
		npps:    []*appsv1alpha1.NodePodProbe{npp(entry(state("game#idle", succeeded, "", t0)))},
	})
	f.sync(t, "ns/web")
	f.kube.ClearActions()
	f.sync(t, "ns/web")
	assert.Empty(t, f.kube.Actions())

	// A new result for the same cached version is a new plan: written.
	require.NoError(t, f.npps.Update(npp(entry(state("game#idle", failed, "", t1)))))
	f.sync(t, "ns/web")
	assert.Len(t, f.patches(), 2)
}

// A failed status patch sends no metadata patch and is retried as a whole.
func TestSyncStatusFailureRetries(t *testing.T) {
	f := newFixture(t, setup{
		pods:    []*corev1.Pod{pod()},
		markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
		npps:    []*appsv1alpha1.NodePodProbe{npp(entry(state("game#idle", succeeded, "", t0)))},
	})
	fail := true
	f.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fail && a.GetSubresource() == "status" {
			return true, nil, errors.New("boom")
		}
		return false, nil, nil
	})
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, "ns/web")
	require.ErrorContains(t, err, "boom")
	assert.Len(t, f.patches(), 1, "no metadata patch after the failure")

	fail = false
	f.kube.ClearActions()
	f.sync(t, "ns/web")
	assert.Len(t, f.patches(), 2, "retried whole")
}

func TestSyncPodGoneOrUnscheduled(t *testing.T) {
	f := newFixture(t, setup{markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())}})
	f.sync(t, "ns/missing")
	assert.Empty(t, f.kube.Actions())

	unscheduled := pod(gen.SetPodNodeName(""))
	f = newFixture(t, setup{pods: []*corev1.Pod{unscheduled}, markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())}})
	f.sync(t, "ns/web")
	assert.Empty(t, f.kube.Actions())
}

// Results are read by uid: an entry of an earlier pod of the same name does not count.
func TestResultsOfMatchesUID(t *testing.T) {
	other := entry(state("game#idle", succeeded, "", t0))
	other.UID = "uid-earlier"
	f := newFixture(t, setup{pods: []*corev1.Pod{pod()}, npps: []*appsv1alpha1.NodePodProbe{npp(other)}})
	assert.Nil(t, f.ctrl.resultsOf(pod()).Entry)

	require.NoError(t, f.npps.Update(npp(other, entry())))
	assert.Equal(t, entry(), f.ctrl.resultsOf(pod()).Entry)
}

func TestSyncServerless(t *testing.T) {
	virtual := gen.Node("node-a", gen.AddNodeLabel(appsv1alpha1.VirtualKubeletLabel, appsv1alpha1.VirtualKubeletValue))
	served := pod(gen.SetPodCondition(corev1.PodCondition{Type: "game.io/idle", Status: corev1.ConditionTrue, LastTransitionTime: t0}))
	for _, on := range []bool{true, false} {
		f := newFixture(t, setup{pods: []*corev1.Pod{served}, markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			nodes: []*corev1.Node{virtual}, serverless: on})
		f.sync(t, "ns/web")
		if !on {
			assert.Empty(t, f.kube.Actions(), "gate off: a virtual node's pod has no results")
			continue
		}
		ps := f.patches()
		require.Len(t, ps, 1, "metadata only")
		assert.Equal(t, "", ps[0].GetSubresource())
		got := f.refresh(t, "web")
		assert.Equal(t, "true", got.Labels["idle"])
		assert.JSONEq(t, asJSON(t, served.Status.Conditions), asJSON(t, got.Status.Conditions), "the virtual node's conditions are left alone")
	}
	_, err := New(Config{Config: ctrlbase.Config{Client: fake.NewClientset()}, Serverless: true})
	assert.Error(t, err)
}

func TestChangedPods(t *testing.T) {
	web := entry(state("game#idle", succeeded, "", t0))
	webFailed := entry(state("game#idle", failed, "", t1))
	db := &appsv1alpha1.PodProbeStatus{Name: "db", Namespace: "ns", UID: "uid-db", ProbeStates: []appsv1alpha1.ContainerProbeState{state("game#idle", succeeded, "", t0)}}
	webAgain := entry(state("game#idle", succeeded, "", t0))
	webAgain.UID = "uid-web-2"
	tests := []struct {
		name string
		o, n *appsv1alpha1.NodePodProbe
		want []string
	}{
		{"added: every pod", nil, npp(web, db), []string{"ns/web", "ns/db"}},
		{"deleted: every pod", npp(web, db), nil, []string{"ns/web", "ns/db"}},
		{"unchanged: none", npp(web, db), npp(web, db), nil},
		{"spec only: none", npp(web), func() *appsv1alpha1.NodePodProbe {
			n := npp(web)
			n.Spec.PodProbes = []appsv1alpha1.PodProbe{{Name: "web", Namespace: "ns", UID: podUID}}
			return n
		}(), nil},
		{"one state flipped: that pod", npp(web, db), npp(webFailed, db), []string{"ns/web"}},
		{"a message changed: that pod", npp(web), npp(entry(state("game#idle", succeeded, "HTTP 200", t0))), []string{"ns/web"}},
		{"a pod left: that pod", npp(web, db), npp(db), []string{"ns/web"}},
		{"a pod came: that pod", npp(db), npp(db, web), []string{"ns/web"}},
		{"recreated under the same name: once", npp(web), npp(webAgain), []string{"ns/web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, changedPods(tc.o, tc.n))
		})
	}
}

// The informers' events queue exactly the pods concerned.
func TestEventsQueueThePodsConcerned(t *testing.T) {
	web := pod()
	lobby := pod(gen.AddPodLabels(map[string]string{"app": "lobby"}))
	lobby.Name = "lobby"
	elsewhere := pod()
	elsewhere.Namespace = "other"
	m := marker("game", idleProbe())
	f := newFixture(t, setup{pods: []*corev1.Pod{web, lobby, elsewhere}, markers: []*appsv1alpha1.PodProbeMarker{m}})
	c := f.ctrl

	t.Run("marker added: the pods it selects", func(t *testing.T) {
		c.markerChanged(nil, m)
		assert.Equal(t, []string{"ns/web"}, f.queued())
	})
	t.Run("marker status update: none", func(t *testing.T) {
		n := m.DeepCopy()
		n.Status.MatchedPods = 1
		c.markerChanged(m, n)
		assert.Empty(t, f.queued())
	})
	t.Run("marker spec update: the pods it selects", func(t *testing.T) {
		n := m.DeepCopy()
		n.Generation++
		n.Spec.Probes = nil
		c.markerChanged(m, n)
		assert.Equal(t, []string{"ns/web"}, f.queued())
	})
	t.Run("marker being deleted: the pods it selects", func(t *testing.T) {
		c.markerChanged(m, deleting(m.DeepCopy()))
		assert.Equal(t, []string{"ns/web"}, f.queued())
	})
	t.Run("marker deleted (tombstone): the pods it selected", func(t *testing.T) {
		c.markerChanged(cache.DeletedFinalStateUnknown{Key: "ns/game", Obj: m}, nil)
		assert.Equal(t, []string{"ns/web"}, f.queued())
	})
	t.Run("NodePodProbe status update: the pods whose results changed", func(t *testing.T) {
		c.resultsChanged(npp(entry()), npp(entry(state("game#idle", succeeded, "", t0))))
		assert.Equal(t, []string{"ns/web"}, f.queued())
	})
	t.Run("pod added in a namespace with markers", func(t *testing.T) {
		c.podAdded(lobby)
		assert.Equal(t, []string{"ns/lobby"}, f.queued())
	})
	t.Run("pod added in a namespace without markers, unmarked: none", func(t *testing.T) {
		c.podAdded(elsewhere)
		assert.Empty(t, f.queued())
	})
	t.Run("pod with marks in a namespace without markers: queued (to take them off)", func(t *testing.T) {
		marked := elsewhere.DeepCopy()
		marked.Annotations = map[string]string{nodeprobe.MarksAnnotation: "{}"}
		c.podAdded(marked)
		assert.Equal(t, []string{"other/web"}, f.queued())
		withCondition := elsewhere.DeepCopy()
		withCondition.Status.Conditions = []corev1.PodCondition{ourCondition("x", corev1.ConditionTrue, "", t0)}
		c.podAdded(withCondition)
		assert.Equal(t, []string{"other/web"}, f.queued())
	})
	t.Run("pod updates", func(t *testing.T) {
		changes := map[string]func(*corev1.Pod){
			"labels":      func(p *corev1.Pod) { p.Labels["app"] = "lobby" },
			"annotations": func(p *corev1.Pod) { p.Annotations = map[string]string{nodeprobe.MarksAnnotation: "{}"} },
			"conditions": func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: "game.io/idle", Status: corev1.ConditionTrue}}
			},
			"node":     func(p *corev1.Pod) { p.Spec.NodeName = "node-b" },
			"phase":    func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded },
			"deletion": func(p *corev1.Pod) { p.DeletionTimestamp = &t1 },
		}
		for name, change := range changes {
			n := web.DeepCopy()
			change(n)
			c.podUpdated(web, n)
			assert.Equal(t, []string{"ns/web"}, f.queued(), name)
		}
		n := web.DeepCopy()
		n.ResourceVersion = "2"
		n.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 1}}
		c.podUpdated(web, n)
		assert.Empty(t, f.queued(), "the kubelet's other status writes: none")
	})
	t.Run("pod deleted: its memory is dropped", func(t *testing.T) {
		c.written["ns/web"] = writtenPlan{}
		c.podDeleted(cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: web})
		assert.NotContains(t, c.written, "ns/web")
		assert.Empty(t, f.queued())
	})
}

// End to end over fake clients: the informers' handlers are wired, and a result reported in a
// NodePodProbe's status reaches the pod through Run.
func TestRunMarksOnAResult(t *testing.T) {
	kube := fake.NewClientset(pod())
	kruise := kruisefake.NewSimpleClientset(marker("game", idleProbe()), npp())
	kf := informers.NewSharedInformerFactory(kube, 0)
	rf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	c, err := New(Config{
		Config:        ctrlbase.Config{Client: kube, KruiseClient: kruise, Recorder: record.NewFakeRecorder(10)},
		Pods:          kf.Core().V1().Pods(),
		Markers:       rf.Apps().V1alpha1().PodProbeMarkers(),
		NodePodProbes: rf.Apps().V1alpha1().NodePodProbes(),
	})
	require.NoError(t, err)
	assert.Equal(t, Name, c.Name())
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rf.Start(ctx.Done())
	kf.Start(ctx.Done())
	rf.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()

	n := npp(entry(state("game#idle", succeeded, "", t0)))
	_, err = kruise.AppsV1alpha1().NodePodProbes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := kube.CoreV1().Pods("ns").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Labels["idle"] == "true" && len(p.Status.Conditions) == 1
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
