package nodeimage

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	nodeName = "node-a"
	nodeUID  = types.UID("node-uid-1")
	niUID    = types.UID("ni-uid-1")
)

var now = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// ---- nodes ----

// newNode is a Ready node named nodeName with the labels, changed by mods.
func newNode(labels map[string]string, mods ...gen.NodeModifier) *corev1.Node {
	n := gen.Node(nodeName, gen.SetNodeUID(nodeUID), gen.SetNodeLabels(labels), gen.SetNodeResourceVersion("3"),
		gen.SetNodeCondition(corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}),
		gen.SetNodeCondition(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(now)}))
	return gen.NodeFrom(n, mods...)
}

var (
	// notReady makes the node's Ready condition Unknown.
	notReady = gen.SetNodeCondition(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastHeartbeatTime: metav1.NewTime(now)})
	// virtual labels the node as a virtual-kubelet one.
	virtual = gen.AddNodeLabel(appsv1alpha1.VirtualKubeletLabel, appsv1alpha1.VirtualKubeletValue)
)

// ---- NodeImages ----

// newNodeImage is nodeName's NodeImage with the labels, owned by the node,
// with a spec and a status written by others.
func newNodeImage(labels map[string]string) *appsv1beta1.NodeImage {
	return gen.NodeImage(nodeName, gen.SetNodeImageUID(niUID), gen.SetNodeImageLabels(labels), gen.SetNodeImageResourceVersion("11"),
		gen.SetNodeImageOwnerReferences(metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}),
		gen.AddNodeImageTags("nginx", appsv1beta1.ImageTagSpec{Tag: "1.27", Version: 2}),
		gen.SetNodeImageStatus(appsv1beta1.NodeImageStatus{Desired: 1, Succeeded: 1, ImageStatuses: map[string]appsv1beta1.ImageStatus{
			"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1.27", Phase: appsv1beta1.ImagePhaseSucceeded, Version: 2}}},
		}}))
}

// ---- fixture ----

type fixture struct {
	ctrl        *Controller
	kube        *fake.Clientset
	kruise      *kruisefake.Clientset
	recorder    *record.FakeRecorder
	nodeIndexer cache.Indexer
	niIndexer   cache.Indexer
}

// objects split by where they live. nodes and nodeImages are in the API
// server and the caches; apiNodes in the API server only.
type objects struct {
	nodes      []*corev1.Node
	apiNodes   []*corev1.Node
	nodeImages []*appsv1beta1.NodeImage
}

func newFixture(t *testing.T, o objects) *fixture {
	t.Helper()
	var kubeObjs, kruiseObjs []runtime.Object
	for _, n := range append(append([]*corev1.Node{}, o.nodes...), o.apiNodes...) {
		kubeObjs = append(kubeObjs, n.DeepCopy())
	}
	for _, ni := range o.nodeImages {
		kruiseObjs = append(kruiseObjs, ni.DeepCopy())
	}
	f := &fixture{
		kube:     fake.NewClientset(kubeObjs...),
		kruise:   kruisefake.NewSimpleClientset(kruiseObjs...),
		recorder: record.NewFakeRecorder(50),
	}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kfactory := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	ctrl, err := New(Config{
		Config:     ctrlbase.Config{Client: f.kube, KruiseClient: f.kruise, Clock: clocktesting.NewFakeClock(now), Recorder: f.recorder},
		Nodes:      factory.Core().V1().Nodes(),
		NodeImages: kfactory.Apps().V1beta1().NodeImages(),
	})
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	// The caches are filled by hand: no informer runs, nothing races.
	f.nodeIndexer = factory.Core().V1().Nodes().Informer().GetIndexer()
	f.niIndexer = kfactory.Apps().V1beta1().NodeImages().Informer().GetIndexer()
	for _, n := range o.nodes {
		require.NoError(t, f.nodeIndexer.Add(n))
	}
	for _, ni := range o.nodeImages {
		require.NoError(t, f.niIndexer.Add(ni))
	}
	f.kube.ClearActions()
	f.kruise.ClearActions()
	f.ctrl = ctrl
	return f
}

func (f *fixture) sync(t *testing.T) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, nodeName)
	require.Zero(t, after, "nothing is looked at again on a timer")
	return err
}

func (f *fixture) mustSync(t *testing.T) {
	t.Helper()
	require.NoError(t, f.sync(t))
}

// writes lists the calls of both clients other than reads.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range append(f.kube.Actions(), f.kruise.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

// liveNodeImage reads nodeName's NodeImage from the API server; nil when
// there is none.
func (f *fixture) liveNodeImage(t *testing.T) *appsv1beta1.NodeImage {
	t.Helper()
	ni, err := f.kruise.AppsV1beta1().NodeImages().Get(context.Background(), nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return ni
}

func (f *fixture) events() []string {
	return gen.DrainEvents(f.recorder)
}

// decodePatch returns the merge patch a write sent, decoded.
func decodePatch(t *testing.T, a k8stesting.Action) map[string]any {
	t.Helper()
	p, ok := a.(k8stesting.PatchAction)
	require.True(t, ok, "%s is not a patch", a.GetVerb())
	require.Equal(t, types.MergePatchType, p.GetPatchType())
	var body map[string]any
	require.NoError(t, json.Unmarshal(p.GetPatch(), &body), "%s", p.GetPatch())
	return body
}
