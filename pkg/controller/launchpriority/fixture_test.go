package launchpriority

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
	"k8s.io/utils/ptr"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	testNS  = "default"
	podName = "web"
	podUID  = types.UID("pod-uid-1")
	podKey  = testNS + "/" + podName
	barrier = podName + lp.BarrierSuffix

	slowAfter = 5 * time.Minute
	recheck   = time.Minute
)

// now is the fake clock's time; pods started a minute before.
var (
	now     = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	started = now.Add(-time.Minute)
)

// ---- pods ----

func prio(p string) corev1.EnvVar { return corev1.EnvVar{Name: lp.EnvPriority, Value: p} }

// top adds a container the webhook left without a barrier, with the env vars.
func top(name string, env ...corev1.EnvVar) gen.PodModifier {
	return gen.AddPodContainer(corev1.Container{Name: name, Image: name + ":1", Env: env})
}

// waits adds a container that reads key p of the ConfigMap cm, after env.
func waits(name, cm string, p int, env ...corev1.EnvVar) gen.PodModifier {
	return gen.AddPodContainer(corev1.Container{Name: name, Image: name + ":1", Env: append(env, lp.BarrierEnv(cm, p))})
}

// ready marks containers Ready and running.
func ready(names ...string) gen.PodModifier {
	return func(p *corev1.Pod) {
		for _, n := range names {
			gen.SetPodContainerStatus(corev1.ContainerStatus{Name: n, Ready: true, Started: ptr.To(true), ContainerID: "containerd://" + n,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}})(p)
		}
	}
}

// unready marks containers running but not Ready.
func unready(names ...string) gen.PodModifier {
	return func(p *corev1.Pod) {
		for _, n := range names {
			gen.SetPodContainerStatus(corev1.ContainerStatus{Name: n, ContainerID: "containerd://" + n,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}})(p)
		}
	}
}

// blocked marks containers as the kubelet shows one whose barrier key (or
// ConfigMap) is missing.
func blocked(names ...string) gen.PodModifier {
	return func(p *corev1.Pod) {
		for _, n := range names {
			gen.SetPodContainerStatus(corev1.ContainerStatus{Name: n,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError"}}})(p)
		}
	}
}

// exited marks a container terminated with code.
func exited(name string, code int32) gen.PodModifier {
	return gen.SetPodContainerStatus(corev1.ContainerStatus{Name: name, ContainerID: "containerd://" + name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(now)}}})
}

var completed = gen.AddPodAnnotations(map[string]string{lp.AnnotationCompleted: lp.KeyValue})

// newPod is pod web, running since started, with mods.
func newPod(mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{gen.SetPodNamespace(testNS), gen.SetPodUID(podUID), gen.SetPodResourceVersion("7"),
		gen.SetPodRestartPolicy(corev1.RestartPolicyAlways), gen.SetPodNodeName("node-a"), gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodStartTime(started)}
	return gen.Pod(podName, append(base, mods...)...)
}

// threeLevels is db (10, starts at once), cache (5) and app (0), as the
// webhook admits them.
func threeLevels(mods ...gen.PodModifier) *corev1.Pod {
	return newPod(append([]gen.PodModifier{
		top("db", prio("10")), waits("cache", barrier, 5, prio("5")), waits("app", barrier, 0),
	}, mods...)...)
}

// ---- ConfigMaps ----

// barrierCM is the ConfigMap named name owned by pod uid with the keys.
func barrierCM(name string, owner metav1.OwnerReference, keys ...string) *corev1.ConfigMap {
	data := map[string]string{}
	for _, k := range keys {
		data[k] = lp.KeyValue
	}
	return gen.ConfigMap(name, gen.SetConfigMapNamespace(testNS), gen.SetConfigMapResourceVersion("3"),
		gen.SetConfigMapOwnerReferences(owner), gen.SetConfigMapData(data))
}

// podOwner is the owner reference the controller writes for pod web.
func podOwner() metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: podUID, Controller: ptr.To(true)}
}

// ---- fixture ----

type fixture struct {
	ctrl       *Controller
	kube       *fake.Clientset
	podIndexer cache.Indexer
	clock      *clocktesting.FakeClock
	recorder   *record.FakeRecorder
}

// newFixture is the controller over a fake clientset holding the pod (also
// in the cache) and the ConfigMaps.
func newFixture(t *testing.T, pod *corev1.Pod, cms ...*corev1.ConfigMap) *fixture {
	t.Helper()
	var objs []runtime.Object
	if pod != nil {
		objs = append(objs, pod.DeepCopy())
	}
	for _, cm := range cms {
		objs = append(objs, cm)
	}
	f := &fixture{kube: fake.NewClientset(objs...), clock: clocktesting.NewFakeClock(now), recorder: record.NewFakeRecorder(50)}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	pods := factory.Core().V1().Pods()
	ctrl, err := New(Config{Client: f.kube, Pods: pods, SlowAfter: slowAfter, Recheck: recheck, Recorder: f.recorder, Clock: f.clock})
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	f.podIndexer = pods.Informer().GetIndexer()
	if pod != nil {
		require.NoError(t, f.podIndexer.Add(pod))
	}
	f.kube.ClearActions()
	f.ctrl = ctrl
	return f
}

// setPod replaces the pod in the cache and on the server, as a status
// update by the kubelet would.
func (f *fixture) setPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	live := f.getPod(t)
	pod = pod.DeepCopy()
	pod.Annotations = live.Annotations // what the controller wrote stays
	_, err := f.kube.CoreV1().Pods(testNS).Update(context.Background(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, f.podIndexer.Update(f.getPod(t)))
	f.kube.ClearActions()
}

// cacheLive copies the server's pod into the cache, as its watch event would.
func (f *fixture) cacheLive(t *testing.T) {
	t.Helper()
	require.NoError(t, f.podIndexer.Update(f.getPod(t)))
}

func (f *fixture) sync(t *testing.T) time.Duration {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, podKey)
	require.NoError(t, err)
	return after
}

// writes lists the calls other than reads.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.kube.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

// keys returns the data of ConfigMap name, nil when there is none.
func (f *fixture) keys(t *testing.T, name string) map[string]string {
	t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return cm.Data
}

func (f *fixture) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return cm
}

func (f *fixture) getPod(t *testing.T) *corev1.Pod {
	t.Helper()
	p, err := f.kube.CoreV1().Pods(testNS).Get(context.Background(), podName, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func (f *fixture) events() []string { return gen.DrainEvents(f.recorder) }

// podPatches decodes the pod patches sent.
func (f *fixture) podPatches(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, a := range f.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			require.Equal(t, types.StrategicMergePatchType, p.GetPatchType())
			var body map[string]any
			require.NoError(t, json.Unmarshal(p.GetPatch(), &body))
			out = append(out, body)
		}
	}
	return out
}

// set is the keys as ConfigMap data.
func set(keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = lp.KeyValue
	}
	return out
}
