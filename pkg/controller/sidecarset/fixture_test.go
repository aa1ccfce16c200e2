package sidecarset

import (
	"context"
	"fmt"
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
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	podNS     = "web"
	kruiseNS  = "kruise-system"
	appLabel  = "app"
	appValue  = "web"
	agentName = "agent"
	proxyName = "proxy"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sidecarSetAt is SidecarSet "log" selecting app=web, with a regular sidecar "agent" and a
// native sidecar "proxy" at version v of both images.
func sidecarSetAt(v string, mods ...gen.SidecarSetModifier) *appsv1beta1.SidecarSet {
	base := []gen.SidecarSetModifier{
		gen.SetSidecarSetSelector(map[string]string{appLabel: appValue}),
		gen.AddSidecarSetContainer(gen.Container(agentName, gen.SetContainerImage("agent:"+v))),
		gen.AddSidecarSetInitContainer(gen.Container(proxyName, gen.SetContainerImage("proxy:"+v),
			gen.SetContainerRestartPolicy(corev1.ContainerRestartPolicyAlways))),
	}
	// The generation is the scenario's whatever mods set.
	return gen.SidecarSet("log", append(append(base, mods...), gen.SetSidecarSetGeneration(3))...)
}

// injectedPod is a running, ready pod into which ss was injected, its sidecars running the
// images ss names.
func injectedPod(t *testing.T, name string, ss *appsv1beta1.SidecarSet, mods ...gen.PodModifier) *corev1.Pod {
	t.Helper()
	pod := gen.Pod(name, gen.SetPodNamespace(podNS), gen.SetPodUID(types.UID(name)), gen.SetPodResourceVersion("10"),
		gen.AddPodLabels(map[string]string{appLabel: appValue}),
		gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}),
		gen.AddPodContainer(gen.Container("app", gen.SetContainerImage("app:1"))),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", ImageID: "sha-app", ContainerID: "cri://" + name + "-app", Ready: true}))
	for _, sc := range ss.Spec.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, sc.Container)
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: sc.Name, Image: sc.Image, ImageID: "sha-" + sc.Image,
			ContainerID: "cri://" + name + "-" + sc.Image, Ready: true})(pod)
	}
	for _, sc := range ss.Spec.InitContainers {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, sc.Container)
		gen.SetPodInitContainerStatus(corev1.ContainerStatus{Name: sc.Name, Image: sc.Image, ImageID: "sha-" + sc.Image,
			ContainerID: "cri://" + name + "-" + sc.Image, Ready: true})(pod)
	}
	h, err := hashesOf(ss)
	require.NoError(t, err)
	for key, hash := range map[string]string{sidecarrules.HashAnnotation: h.full, sidecarrules.HashWithoutImageAnnotation: h.withoutImage} {
		require.NoError(t, sidecarrules.SetUpgradeSpec(pod, key, sidecarrules.UpgradeSpec{
			Hash: hash, SidecarSetName: ss.Name, SidecarList: []string{agentName, proxyName}, ControllerRevision: "log-old"}))
	}
	pod.Annotations[sidecarrules.InjectedListAnnotation] = ss.Name
	return gen.PodFrom(pod, mods...)
}

func notReady(p *corev1.Pod) {
	gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})(p)
}

type fixture struct {
	t        *testing.T
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	ss       *appsv1beta1.SidecarSet
}

func newFixture(t *testing.T, ss *appsv1beta1.SidecarSet, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, budgetwait.Check{}, ss, objs...)
}

// newFixtureWith is newFixture with Config.Budget check.
func newFixtureWith(t *testing.T, check budgetwait.Check, ss *appsv1beta1.SidecarSet, objs ...runtime.Object) *fixture {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podNS, Labels: map[string]string{corev1.LabelMetadataName: podNS}}}
	kube := fake.NewClientset(append([]runtime.Object{ns}, objs...)...)
	kruise := kruisefake.NewSimpleClientset(ss)
	inf := informers.NewSharedInformerFactory(kube, 0)
	kinf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	rec := record.NewFakeRecorder(100)
	ctrl, err := New(Config{
		Config:      ctrlbase.Config{Client: kube, KruiseClient: kruise, Recorder: rec, Clock: clocktesting.NewFakeClock(t0)},
		SidecarSets: kinf.Apps().V1beta1().SidecarSets(),
		Pods:        inf.Core().V1().Pods(),
		Namespaces:  inf.Core().V1().Namespaces(),
		Revisions:   inf.Apps().V1().ControllerRevisions(),
		Namespace:   kruiseNS,
		Budget:      check,
	})
	require.NoError(t, err)
	require.NoError(t, kinf.Apps().V1beta1().SidecarSets().Informer().GetIndexer().Add(ss))
	require.NoError(t, inf.Core().V1().Namespaces().Informer().GetIndexer().Add(ns))
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Pod:
			require.NoError(t, inf.Core().V1().Pods().Informer().GetIndexer().Add(v))
		case *appsv1.ControllerRevision:
			require.NoError(t, inf.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(v))
		}
	}
	kube.ClearActions()
	kruise.ClearActions()
	return &fixture{t: t, ctrl: ctrl, kube: kube, kruise: kruise, recorder: rec, ss: ss}
}

func testContext(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

func (f *fixture) sync() error {
	f.t.Helper()
	_, err := f.ctrl.sync(testContext(f.t), f.ss.Name)
	return err
}

// patchedPods names the pods whose spec or metadata the controller patched, in order.
func (f *fixture) patchedPods() []string { return f.podPatches("") }

// statusPatchedPods names the pods whose status the controller patched, in order.
func (f *fixture) statusPatchedPods() []string { return f.podPatches("status") }

func (f *fixture) podPatches(subresource string) []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" && a.GetSubresource() == subresource {
			out = append(out, a.(interface{ GetName() string }).GetName())
		}
	}
	return out
}

// status is the SidecarSet's last written status; it fails the test when none was written.
func (f *fixture) status() appsv1beta1.SidecarSetStatus {
	f.t.Helper()
	ss, err := f.kruise.AppsV1beta1().SidecarSets().Get(context.Background(), f.ss.Name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return ss.Status
}

// events drains the recorded Events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func podNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}
