package podunavailablebudget

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const ns = "default"

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// readyPod is a running, Ready pod of ReplicaSet web-abc (Deployment web), labelled app=web.
func readyPod(name string, mods ...gen.PodModifier) *corev1.Pod {
	return gen.Pod(name, append([]gen.PodModifier{
		gen.SetPodNamespace(ns), gen.SetPodUID(types.UID("uid-" + name)),
		gen.AddPodLabels(map[string]string{"app": "web"}),
		gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "uid-web-abc", Controller: ptr.To(true)}),
		gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}),
		func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour)) },
	}, mods...)...)
}

func deployment(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-web"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
}

func replicaSet(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: ns, UID: "uid-web-abc",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas},
	}
}

// budget targets Deployment web with maxUnavailable 1, at generation 2.
func budget(mods ...gen.PUBModifier) *policyv1alpha1.PodUnavailableBudget {
	return gen.PUB("web-pub", append([]gen.PUBModifier{gen.SetPUBNamespace(ns), gen.SetPUBGeneration(2), gen.SetPUBResourceVersion("1"),
		gen.SetPUBTarget("apps/v1", "Deployment", "web"), gen.SetPUBMaxUnavailable("1")}, mods...)...)
}

type fixture struct {
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	budgets  cache.Indexer
}

type objects struct {
	budgets []*policyv1alpha1.PodUnavailableBudget
	kube    []runtime.Object
	cfg     Config
}

func newFixture(t *testing.T, o objects) *fixture {
	t.Helper()
	var kruiseObjs []runtime.Object
	for _, b := range o.budgets {
		kruiseObjs = append(kruiseObjs, b.DeepCopy())
	}
	var kubeObjs []runtime.Object
	for _, obj := range o.kube {
		kubeObjs = append(kubeObjs, obj.DeepCopyObject())
	}
	f := &fixture{
		kube:     fake.NewClientset(kubeObjs...),
		kruise:   kruisefake.NewSimpleClientset(kruiseObjs...),
		recorder: record.NewFakeRecorder(100),
		clock:    clocktesting.NewFakeClock(now),
	}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	cfg := o.cfg
	cfg.Client, cfg.KruiseClient, cfg.Recorder, cfg.Clock = f.kube, f.kruise, f.recorder, f.clock
	cfg.Budgets = kf.Policy().V1alpha1().PodUnavailableBudgets()
	f.budgets = cfg.Budgets.Informer().GetIndexer()
	cfg.Pods = factory.Core().V1().Pods()
	cfg.ReplicaSets = factory.Apps().V1().ReplicaSets()
	cfg.Deployments = factory.Apps().V1().Deployments()
	cfg.StatefulSets = factory.Apps().V1().StatefulSets()
	cfg.CloneSets = kf.Apps().V1beta1().CloneSets()
	cfg.AdvancedStatefulSets = kf.Apps().V1beta1().StatefulSets()
	ctrl, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	f.ctrl = ctrl
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	kf.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	// Drain what the initial listing queued.
	for ctrl.queue.Len() > 0 {
		k, _ := ctrl.queue.Get()
		ctrl.queue.Done(k)
		ctrl.queue.Forget(k)
	}
	f.kube.ClearActions()
	f.kruise.ClearActions()
	return f
}

func (f *fixture) sync(t *testing.T, key string) time.Duration {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, key)
	require.NoError(t, err)
	return after
}

// statusWrites are the budgets the controller wrote.
func (f *fixture) statusWrites() []*policyv1alpha1.PodUnavailableBudget {
	var out []*policyv1alpha1.PodUnavailableBudget
	for _, a := range f.kruise.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*policyv1alpha1.PodUnavailableBudget))
		}
	}
	return out
}

// podPatches are the pods patched, by name, with the patch.
func (f *fixture) podPatches() map[string]string {
	out := map[string]string{}
	for _, a := range f.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			out[p.GetName()] = string(p.GetPatch())
		}
	}
	return out
}
