package nodeimage

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var nodeLabels = map[string]string{"kubernetes.io/hostname": nodeName, "zone": "a"}

func TestSyncCreatesForReadyNode(t *testing.T) {
	f := newFixture(t, objects{nodes: []*corev1.Node{newNode(nodeLabels)}})
	f.mustSync(t)

	writes := f.writes()
	require.Len(t, writes, 1)
	assert.Equal(t, "create", writes[0].GetVerb())
	assert.Equal(t, "nodeimages", writes[0].GetResource().Resource)
	assert.Equal(t, "v1beta1", writes[0].GetResource().Version)
	ni := f.liveNodeImage(t)
	require.NotNil(t, ni)
	assert.Equal(t, nodeLabels, ni.Labels)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}}, ni.OwnerReferences)
	assert.Empty(t, ni.Spec.Images, "created with an empty spec")
	assert.Empty(t, ni.Namespace, "cluster-scoped")

	// The labels are the controller's copy, not the node's map.
	ni.Labels["zone"] = "changed"
	assert.Equal(t, "a", nodeLabels["zone"])
}

func TestSyncCreateAlreadyExists(t *testing.T) {
	// The API server has it, the cache not yet: no error, no second try.
	f := newFixture(t, objects{nodes: []*corev1.Node{newNode(nodeLabels)}})
	_, err := f.kruise.AppsV1beta1().NodeImages().Create(t.Context(), newNodeImage(nodeLabels), metav1.CreateOptions{})
	require.NoError(t, err)
	f.kruise.ClearActions()
	f.mustSync(t)
	require.Len(t, f.writes(), 1)
	assert.Equal(t, "create", f.writes()[0].GetVerb())
	assert.Equal(t, int32(1), f.liveNodeImage(t).Status.Desired, "the existing one is untouched")
}

func TestSyncCreateFails(t *testing.T) {
	f := newFixture(t, objects{nodes: []*corev1.Node{newNode(nodeLabels)}})
	f.kruise.PrependReactor("create", "nodeimages", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps.kruise.io", Resource: "nodeimages"}, nodeName, errors.New("no RBAC"))
	})
	err := f.sync(t)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "creating NodeImage node-a")
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonNodeImageFailed+" Failed creating NodeImage node-a")

	// A transient error is retried without an Event.
	f2 := newFixture(t, objects{nodes: []*corev1.Node{newNode(nodeLabels)}})
	f2.kruise.PrependReactor("create", "nodeimages", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd")
	})
	require.Error(t, f2.sync(t))
	assert.Empty(t, f2.events())
}

func TestSyncNotReady(t *testing.T) {
	t.Run("without NodeImage: none is created", func(t *testing.T) {
		f := newFixture(t, objects{nodes: []*corev1.Node{newNode(nodeLabels, notReady)}})
		f.mustSync(t)
		assert.Empty(t, f.writes())
		assert.Nil(t, f.liveNodeImage(t))
	})
	t.Run("no Ready condition at all: none is created", func(t *testing.T) {
		n := newNode(nodeLabels)
		n.Status.Conditions = nil
		f := newFixture(t, objects{nodes: []*corev1.Node{n}})
		f.mustSync(t)
		assert.Empty(t, f.writes())
	})
	t.Run("with NodeImage: it is kept", func(t *testing.T) {
		f := newFixture(t, objects{
			nodes:      []*corev1.Node{newNode(nodeLabels, notReady)},
			nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)},
		})
		f.mustSync(t)
		assert.Empty(t, f.writes())
		assert.NotNil(t, f.liveNodeImage(t))
	})
	t.Run("with NodeImage: labels still followed", func(t *testing.T) {
		f := newFixture(t, objects{
			nodes:      []*corev1.Node{newNode(map[string]string{"zone": "b"}, notReady)},
			nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)},
		})
		f.mustSync(t)
		require.Len(t, f.writes(), 1)
		assert.Equal(t, map[string]string{"zone": "b"}, f.liveNodeImage(t).Labels)
	})
}

func TestSyncVirtualKubelet(t *testing.T) {
	t.Run("none is created", func(t *testing.T) {
		f := newFixture(t, objects{nodes: []*corev1.Node{newNode(nil, virtual)}})
		f.mustSync(t)
		assert.Empty(t, f.writes())
		assert.Nil(t, f.liveNodeImage(t))
	})
	t.Run("an existing one is deleted", func(t *testing.T) {
		f := newFixture(t, objects{
			nodes:      []*corev1.Node{newNode(map[string]string{"zone": "a"}, virtual)},
			nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)},
		})
		f.mustSync(t)
		writes := f.writes()
		require.Len(t, writes, 1)
		del, ok := writes[0].(k8stesting.DeleteAction)
		require.True(t, ok, "%v", writes[0])
		assert.Equal(t, nodeName, del.GetName())
		require.NotNil(t, del.GetDeleteOptions().Preconditions)
		assert.Equal(t, ptr.To(niUID), del.GetDeleteOptions().Preconditions.UID)
		assert.Nil(t, f.liveNodeImage(t))
	})
}

func TestSyncNodeDeleted(t *testing.T) {
	t.Run("NodeImage deleted", func(t *testing.T) {
		f := newFixture(t, objects{nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)}})
		f.mustSync(t)
		require.Len(t, f.writes(), 1)
		assert.Equal(t, "delete", f.writes()[0].GetVerb())
		assert.Nil(t, f.liveNodeImage(t))
		// Again (the NodeImage's delete event): nothing left to do.
		require.NoError(t, f.niIndexer.Delete(newNodeImage(nodeLabels)))
		f.kruise.ClearActions()
		f.mustSync(t)
		assert.Empty(t, f.writes())
	})
	t.Run("already gone", func(t *testing.T) {
		f := newFixture(t, objects{nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)}})
		require.NoError(t, f.kruise.AppsV1beta1().NodeImages().Delete(t.Context(), nodeName, metav1.DeleteOptions{}))
		f.kruise.ClearActions()
		f.mustSync(t)
	})
	t.Run("node not cached yet but exists: kept", func(t *testing.T) {
		f := newFixture(t, objects{
			apiNodes:   []*corev1.Node{newNode(nodeLabels)},
			nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)},
		})
		f.mustSync(t)
		assert.Empty(t, f.writes())
		assert.NotNil(t, f.liveNodeImage(t))
	})
	t.Run("node lookup fails: retried", func(t *testing.T) {
		f := newFixture(t, objects{nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)}})
		f.kube.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("down")
		})
		require.Error(t, f.sync(t))
		assert.Empty(t, f.writes())
		assert.NotNil(t, f.liveNodeImage(t))
	})
	t.Run("a test NodeImage without a node: left alone", func(t *testing.T) {
		fake := newNodeImage(map[string]string{"apps.kruise.io/fake-nodeimage": "true"})
		f := newFixture(t, objects{nodeImages: []*appsv1beta1.NodeImage{fake}})
		f.mustSync(t)
		assert.Empty(t, append(f.kube.Actions(), f.kruise.Actions()...), "not even a node lookup")
		assert.NotNil(t, f.liveNodeImage(t))
	})
	t.Run("neither node nor NodeImage", func(t *testing.T) {
		f := newFixture(t, objects{})
		f.mustSync(t)
		assert.Empty(t, append(f.kube.Actions(), f.kruise.Actions()...), "not even a read")
	})
}

func TestSyncLabelsChanged(t *testing.T) {
	old := newNodeImage(map[string]string{"zone": "a", "gone": "x", "kubernetes.io/hostname": nodeName})
	want := map[string]string{"zone": "b", "new": "y", "kubernetes.io/hostname": nodeName}
	f := newFixture(t, objects{
		nodes:      []*corev1.Node{newNode(want)},
		nodeImages: []*appsv1beta1.NodeImage{old},
	})
	f.mustSync(t)

	writes := f.writes()
	require.Len(t, writes, 1)
	body := decodePatch(t, writes[0])
	assert.Equal(t, map[string]any{"metadata": map[string]any{
		"uid":    string(niUID),
		"labels": map[string]any{"zone": "b", "new": "y", "gone": nil},
	}}, body, "metadata only: labels that changed, removed ones set to null")

	live := f.liveNodeImage(t)
	assert.Equal(t, want, live.Labels)
	assert.Equal(t, old.Spec, live.Spec, "spec untouched")
	assert.Equal(t, old.Status, live.Status, "status untouched")
	assert.Equal(t, old.OwnerReferences, live.OwnerReferences)
}

func TestSyncNodeWithoutLabels(t *testing.T) {
	f := newFixture(t, objects{
		nodes:      []*corev1.Node{newNode(nil)},
		nodeImages: []*appsv1beta1.NodeImage{newNodeImage(map[string]string{"a": "1"})},
	})
	f.mustSync(t)
	require.Len(t, f.writes(), 1)
	assert.Empty(t, f.liveNodeImage(t).Labels)
}

func TestSyncInSyncNoWrite(t *testing.T) {
	ni := newNodeImage(nodeLabels)
	ni.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "Other", Name: "x", UID: "o"}},
		ni.OwnerReferences...)
	f := newFixture(t, objects{
		nodes:      []*corev1.Node{newNode(nodeLabels)},
		nodeImages: []*appsv1beta1.NodeImage{ni},
	})
	f.mustSync(t)
	assert.Empty(t, f.writes())
	assert.Empty(t, f.events())

	// nil and empty label maps are the same.
	f2 := newFixture(t, objects{
		nodes:      []*corev1.Node{newNode(map[string]string{})},
		nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nil)},
	})
	f2.mustSync(t)
	assert.Empty(t, f2.writes())
}

func TestSyncOwnerReference(t *testing.T) {
	t.Run("node recreated: reference follows its new UID, other owners kept", func(t *testing.T) {
		ni := newNodeImage(nodeLabels)
		other := metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "Other", Name: "x", UID: "o"}
		ni.OwnerReferences = append(ni.OwnerReferences, other,
			metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "stray", UID: "s"})
		f := newFixture(t, objects{
			nodes:      []*corev1.Node{newNode(nodeLabels, gen.SetNodeUID("node-uid-2"))},
			nodeImages: []*appsv1beta1.NodeImage{ni},
		})
		f.mustSync(t)
		require.Len(t, f.writes(), 1)
		body := decodePatch(t, f.writes()[0])
		meta := body["metadata"].(map[string]any)
		assert.NotContains(t, meta, "labels", "labels were right")
		live := f.liveNodeImage(t)
		assert.Equal(t, []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: "node-uid-2"},
			other,
		}, live.OwnerReferences)
		assert.Equal(t, ni.Spec, live.Spec)
		assert.Equal(t, ni.Status, live.Status)
	})
	t.Run("missing: added", func(t *testing.T) {
		ni := newNodeImage(nodeLabels)
		ni.OwnerReferences = nil
		f := newFixture(t, objects{
			nodes:      []*corev1.Node{newNode(nodeLabels)},
			nodeImages: []*appsv1beta1.NodeImage{ni},
		})
		f.mustSync(t)
		assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}},
			f.liveNodeImage(t).OwnerReferences)
	})
}

func TestSyncPatchErrors(t *testing.T) {
	setup := func(t *testing.T, err error) *fixture {
		f := newFixture(t, objects{
			nodes:      []*corev1.Node{newNode(map[string]string{"zone": "b"})},
			nodeImages: []*appsv1beta1.NodeImage{newNodeImage(nodeLabels)},
		})
		f.kruise.PrependReactor("patch", "nodeimages", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, err
		})
		return f
	}
	t.Run("gone meanwhile: nothing to do", func(t *testing.T) {
		f := setup(t, apierrors.NewNotFound(schema.GroupResource{Resource: "nodeimages"}, nodeName))
		f.mustSync(t)
	})
	t.Run("conflict: returned for a retry", func(t *testing.T) {
		f := setup(t, apierrors.NewConflict(schema.GroupResource{Resource: "nodeimages"}, nodeName, errors.New("uid")))
		err := f.sync(t)
		assert.True(t, apierrors.IsConflict(err), "%v", err)
		assert.Empty(t, f.events())
	})
}

func TestSyncBeingDeleted(t *testing.T) {
	ni := newNodeImage(map[string]string{"old": "x"})
	ni.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	ni.Finalizers = []string{"example.com/hold"}
	f := newFixture(t, objects{
		nodes:      []*corev1.Node{newNode(nodeLabels)},
		nodeImages: []*appsv1beta1.NodeImage{ni},
	})
	f.mustSync(t)
	assert.Empty(t, f.writes(), "neither patched nor recreated while it goes")

	// A virtual node's NodeImage already going is not deleted again.
	f2 := newFixture(t, objects{
		nodes:      []*corev1.Node{newNode(nil, virtual)},
		nodeImages: []*appsv1beta1.NodeImage{ni},
	})
	f2.mustSync(t)
	assert.Empty(t, f2.writes())
}

func TestNodeUpdated(t *testing.T) {
	f := newFixture(t, objects{})
	q := f.ctrl.queue
	base := newNode(nodeLabels)

	heartbeat := base.DeepCopy()
	heartbeat.ResourceVersion = "4"
	heartbeat.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(now.Add(10e9))
	heartbeat.Status.Conditions[0].Status = corev1.ConditionTrue
	heartbeat.Annotations = map[string]string{"a": "b"}
	heartbeat.Spec.Unschedulable = true
	f.ctrl.nodeUpdated(base, heartbeat)
	f.ctrl.nodeUpdated("x", heartbeat)
	assert.Zero(t, q.Len(), "an update that changes neither labels nor readiness is ignored")

	for name, mut := range map[string]func(*corev1.Node){
		"label changed":  func(n *corev1.Node) { n.Labels = map[string]string{"zone": "b"} },
		"not ready":      func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionFalse },
		"virtual":        func(n *corev1.Node) { n.Labels[appsv1alpha1.VirtualKubeletLabel] = appsv1alpha1.VirtualKubeletValue },
		"Ready vanished": func(n *corev1.Node) { n.Status.Conditions = n.Status.Conditions[:1] },
	} {
		cur := base.DeepCopy()
		mut(cur)
		f.ctrl.nodeUpdated(base, cur)
		require.Equal(t, 1, q.Len(), name)
		key, _ := q.Get()
		assert.Equal(t, nodeName, key, name)
		q.Done(key)
		q.Forget(key)
	}
}

func TestEnqueueNodeAndNodeImage(t *testing.T) {
	f := newFixture(t, objects{})
	q := f.ctrl.queue
	take := func() string {
		t.Helper()
		require.Equal(t, 1, q.Len())
		key, _ := q.Get()
		q.Done(key)
		return key
	}
	f.ctrl.enqueueNode(newNode(nil))
	assert.Equal(t, nodeName, take())
	f.ctrl.enqueueNode(cache.DeletedFinalStateUnknown{Key: nodeName, Obj: newNode(nil)})
	assert.Equal(t, nodeName, take())
	f.ctrl.enqueueNodeImage(newNodeImage(nil))
	assert.Equal(t, nodeName, take())
	f.ctrl.enqueueNodeImage(cache.DeletedFinalStateUnknown{Key: nodeName, Obj: newNodeImage(nil)})
	assert.Equal(t, nodeName, take())
	f.ctrl.enqueueNode("junk")
	f.ctrl.enqueueNodeImage(newNode(nil))
	assert.Zero(t, q.Len())

	// NodeImage updates: spec and status (others' writes) are not ours.
	old := newNodeImage(nodeLabels)
	cur := old.DeepCopy()
	cur.ResourceVersion = "12"
	cur.Status.Pulling = 3
	cur.Spec.Images["redis"] = appsv1beta1.ImageSpec{}
	f.ctrl.nodeImageUpdated(old, cur)
	assert.Zero(t, q.Len())

	for name, mut := range map[string]func(*appsv1beta1.NodeImage){
		"labels":   func(ni *appsv1beta1.NodeImage) { ni.Labels = map[string]string{"x": "y"} },
		"owners":   func(ni *appsv1beta1.NodeImage) { ni.OwnerReferences = nil },
		"deleting": func(ni *appsv1beta1.NodeImage) { ni.DeletionTimestamp = ptr.To(metav1.NewTime(now)) },
	} {
		cur := old.DeepCopy()
		mut(cur)
		f.ctrl.nodeImageUpdated(old, cur)
		assert.Equal(t, nodeName, take(), name)
	}
}

func TestProcessNextWorkItem(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, objects{nodes: []*corev1.Node{newNode(nodeLabels)}})
	f.ctrl.enqueueNode(newNode(nodeLabels))
	require.True(t, f.ctrl.processNextWorkItem(ctx))
	assert.NotNil(t, f.liveNodeImage(t))
	assert.Zero(t, f.ctrl.queue.Len())

	f2 := newFixture(t, objects{nodes: []*corev1.Node{newNode(nodeLabels)}})
	f2.kruise.PrependReactor("create", "nodeimages", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("boom"))
	})
	f2.ctrl.enqueueNode(newNode(nodeLabels))
	require.True(t, f2.ctrl.processNextWorkItem(ctx))
	assert.Equal(t, 1, f2.ctrl.queue.NumRequeues(nodeName), "retried with backoff")

	f.ctrl.queue.ShutDown()
	assert.False(t, f.ctrl.processNextWorkItem(ctx))
}

func TestNew(t *testing.T) {
	kube := fake.NewClientset()
	kruise := kruisefake.NewSimpleClientset()
	cfg := Config{
		Config:     ctrlbase.Config{Client: kube, KruiseClient: kruise},
		Nodes:      informers.NewSharedInformerFactory(kube, 0).Core().V1().Nodes(),
		NodeImages: kruiseinformers.NewSharedInformerFactory(kruise, 0).Apps().V1beta1().NodeImages(),
	}
	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	assert.Equal(t, "nodeimage", c.Name())

	for name, mut := range map[string]func(*Config){
		"Client":       func(c *Config) { c.Client = nil },
		"KruiseClient": func(c *Config) { c.KruiseClient = nil },
		"Nodes":        func(c *Config) { c.Nodes = nil },
		"NodeImages":   func(c *Config) { c.NodeImages = nil },
	} {
		bad := cfg
		mut(&bad)
		_, err := New(bad)
		assert.Error(t, err, name)
	}
}
