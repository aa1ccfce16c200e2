package workloadspread

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
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
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
)

const ns = "default"

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// deployment web with replicas, whose current ReplicaSet is web-abc (pod-template-hash abc).
func deployment(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-web"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
}

func replicaSet(hash, revision string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: ns, UID: types.UID("uid-web-" + hash),
		Labels:          map[string]string{"app": "web", "pod-template-hash": hash},
		Annotations:     map[string]string{deploymentRevision: revision},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)}}}}
}

// pod is a running, ready pod of ReplicaSet web-abc in subset ("" none).
func pod(name, subset string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Labels:            map[string]string{"app": "web", "pod-template-hash": "abc"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "uid-web-abc", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
	if subset != "" {
		b, _ := json.Marshal(appsv1alpha1.InjectWorkloadSpread{Name: "web-ws", Subset: subset})
		p.Annotations = map[string]string{appsv1alpha1.MatchedWorkloadSpreadAnnotation: string(b)}
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// spreadOf targets Deployment web: subset a takes maxA pods ("" unlimited), subset b unlimited.
func spreadOf(maxA string) *appsv1alpha1.WorkloadSpread {
	a := appsv1alpha1.WorkloadSpreadSubset{Name: "a"}
	if maxA != "" {
		v := intstr.Parse(maxA)
		a.MaxReplicas = &v
	}
	return &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: "web-ws", Namespace: ns, UID: "uid-ws", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Subsets:         []appsv1alpha1.WorkloadSpreadSubset{a, {Name: "b"}},
		},
	}
}

type fixture struct {
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	spreads  cache.Indexer
	pods     cache.Indexer
	objects  []runtime.Object
}

// newFixture builds the controller on informers that are never started: the caches are filled
// by hand, and events are the handlers called by the test, so that nothing runs behind its back.
func newFixture(t *testing.T, ws *appsv1alpha1.WorkloadSpread, kube []runtime.Object, cfg Config) *fixture {
	t.Helper()
	f := &fixture{
		kube:     fake.NewClientset(),
		kruise:   kruisefake.NewSimpleClientset(),
		recorder: record.NewFakeRecorder(100),
		clock:    clocktesting.NewFakeClock(now),
	}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	cfg.Client, cfg.KruiseClient, cfg.Recorder, cfg.Clock = f.kube, f.kruise, f.recorder, f.clock
	cfg.WorkloadSpreads = kf.Apps().V1alpha1().WorkloadSpreads()
	cfg.Pods = factory.Core().V1().Pods()
	cfg.Nodes = factory.Core().V1().Nodes()
	cfg.ReplicaSets = factory.Apps().V1().ReplicaSets()
	cfg.Deployments = factory.Apps().V1().Deployments()
	cfg.StatefulSets = factory.Apps().V1().StatefulSets()
	cfg.Jobs = factory.Batch().V1().Jobs()
	cfg.CloneSets = kf.Apps().V1beta1().CloneSets()
	cfg.AdvancedStatefulSets = kf.Apps().V1beta1().StatefulSets()
	ctrl, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	f.ctrl = ctrl
	f.spreads = cfg.WorkloadSpreads.Informer().GetIndexer()
	f.pods = cfg.Pods.Informer().GetIndexer()
	if ws != nil {
		require.NoError(t, f.spreads.Add(ws))
		require.NoError(t, f.kruise.Tracker().Add(ws))
	}
	for _, o := range kube {
		var idx cache.Indexer
		switch o.(type) {
		case *corev1.Pod:
			idx = f.pods
		case *corev1.Node:
			idx = cfg.Nodes.Informer().GetIndexer()
		case *appsv1.ReplicaSet:
			idx = cfg.ReplicaSets.Informer().GetIndexer()
		case *appsv1.Deployment:
			idx = cfg.Deployments.Informer().GetIndexer()
		}
		require.NoError(t, idx.Add(o))
		require.NoError(t, f.kube.Tracker().Add(o))
	}
	return f
}

func (f *fixture) sync(t *testing.T) time.Duration {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, ns+"/web-ws")
	require.NoError(t, err)
	return after
}

// writes are the API writes (not reads) both clients received.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range append(f.kube.Actions(), f.kruise.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a)
	}
	return out
}

// status is the last status written.
func (f *fixture) status(t *testing.T) *appsv1alpha1.WorkloadSpread {
	t.Helper()
	var out *appsv1alpha1.WorkloadSpread
	for _, a := range f.kruise.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			out = u.GetObject().(*appsv1alpha1.WorkloadSpread)
		}
	}
	require.NotNil(t, out, "no status written")
	return out
}

// costPatches are the deletion costs written, by pod.
func (f *fixture) costPatches(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range f.kube.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || a.GetResource().Resource != "pods" {
			continue
		}
		var body struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(p.GetPatch(), &body))
		if v, ok := body.Metadata.Annotations[appsv1alpha1.PodDeletionCostAnnotation]; ok {
			out[p.GetName()] = v
		}
	}
	return out
}

// settle copies what the controller wrote (status, pods) into the caches, as the watches would.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	ws, err := f.kruise.Tracker().Get(appsv1alpha1.SchemeGroupVersion.WithResource("workloadspreads"), ns, "web-ws")
	require.NoError(t, err)
	require.NoError(t, f.spreads.Update(ws))
	for _, o := range f.pods.List() {
		p := o.(*corev1.Pod)
		cur, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), p.Namespace, p.Name)
		if err != nil {
			require.NoError(t, f.pods.Delete(p))
			continue
		}
		require.NoError(t, f.pods.Update(cur))
	}
	f.kube.ClearActions()
	f.kruise.ClearActions()
}
