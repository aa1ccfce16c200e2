package envrestart

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
	"github.com/nodekruise/kruise/pkg/daemon/crrexec"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	ns     = "default"
	pName  = "web-0"
	pUID   = "pod-uid"
	podKey = ns + "/" + pName
	appID  = "app-1"
)

var tNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// fixture is a restarter on a fake CRI runtime behind a real socket,
// reached through the daemon's own CRI client and stopping containers
// through the CRR executor's Stopper, with a pod cache filled by hand.
type fixture struct {
	r        *Restarter
	rt       *critest.FakeRuntime
	pods     informers.SharedInformerFactory
	recorder *record.FakeRecorder
	metrics  *Metrics
	clock    *clocktesting.FakeClock
}

func newFixture(t *testing.T, pod *corev1.Pod) *fixture {
	t.Helper()
	f := &fixture{rt: critest.NewFakeRuntime(), recorder: record.NewFakeRecorder(100), metrics: NewMetrics(),
		clock: clocktesting.NewFakeClock(tNow)}
	sock := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
	critest.Serve(t, sock, f.rt)
	rt, err := cri.Dial(sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })

	f.pods = informers.NewSharedInformerFactory(fake.NewClientset(pod), 0)
	r, err := New(Config{
		Pods:     f.pods.Core().V1().Pods().Informer(),
		Runtime:  rt,
		Stopper:  crrexec.NewStopper(rt, crrexec.NewRunner(rt), clock.RealClock{}),
		Recorder: f.recorder,
		Metrics:  f.metrics,
		Clock:    f.clock,
	})
	require.NoError(t, err)
	t.Cleanup(r.queue.ShutDown)
	f.r = r
	f.setPod(t, pod)
	return f
}

// setPod puts pod in the cache as the daemon's informer would: slimmed
// (kube.SlimPod), so a test fails if the restarter reads a dropped field.
func (f *fixture) setPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	slim, err := kube.SlimPod(pod.DeepCopy())
	require.NoError(t, err)
	require.NoError(t, f.pods.Core().V1().Pods().Informer().GetIndexer().Update(slim))
}

// syncAll syncs the pod as the queue would: a sync that starts a stop is
// followed, once the stop has ended, by the sync its end asks for; a sync
// that asks to look again after the settle delay is followed by one that
// much later on the clock; until a sync does neither or fails.
func (f *fixture) syncAll(t *testing.T) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	for {
		started := f.r.stopsStarted.Load()
		after, err := f.r.sync(ctx, podKey)
		switch {
		case err != nil:
			return err
		case f.r.stopsStarted.Load() != started:
			f.r.stops.Wait()
		case after > 0 && after <= settleDelay:
			f.clock.Step(after)
		default:
			return nil
		}
	}
}

func (f *fixture) stops() []string {
	var ids []string
	for _, c := range f.rt.StopCalls() {
		ids = append(ids, c.ID)
	}
	return ids
}

func (f *fixture) events() []string { return gen.DrainEvents(f.recorder) }

func (f *fixture) restarts(result string) float64 {
	var m dto.Metric
	if err := f.metrics.restarts.WithLabelValues(result).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func fieldRef(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// appEnv is the env of container app: TRACK from a label, OWNER from an
// annotation, and a plain value.
var appEnv = []corev1.EnvVar{
	fieldRef("TRACK", "metadata.labels['track']"),
	fieldRef("OWNER", "metadata.annotations['example.com/owner']"),
	{Name: "PLAIN", Value: "x"},
}

// updatingPod is a pod under an in-place update that changes env from
// metadata (InPlaceUpdateReady False), with container app running as
// instance appID, and labels and annotations as given.
func updatingPod(track, owner string, mods ...gen.PodModifier) *corev1.Pod {
	state, err := json.Marshal(pub.InPlaceUpdateState{Revision: "rev-2", UpdateEnvFromMetadata: true,
		LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{"app": {ContainerID: "containerd://" + appID}}})
	if err != nil {
		panic(err)
	}
	p := gen.Pod(pName, gen.SetPodNamespace(ns), gen.SetPodUID(pUID), gen.SetPodNodeName("node-a"),
		gen.SetPodRestartPolicy(corev1.RestartPolicyAlways), gen.SetPodTerminationGracePeriodSeconds(5),
		gen.AddPodLabels(map[string]string{"track": track, "app": "web"}),
		gen.AddPodAnnotations(map[string]string{"example.com/owner": owner, pub.InPlaceUpdateStateKey: string(state)}),
		gen.AddPodContainer(corev1.Container{Name: "app", Image: "registry.example.com/app:v1", Env: appEnv}),
		gen.AddPodContainer(corev1.Container{Name: "plain", Image: "registry.example.com/plain:v1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}),
		gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}),
		gen.SetPodContainerStatus(runningStatus("app", appID)),
		gen.SetPodContainerStatus(runningStatus("plain", "plain-1")))
	return gen.PodFrom(p, mods...)
}

func runningStatus(name, id string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, ContainerID: "containerd://" + id,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(tNow.Add(-time.Hour))}}}
}

// containerdInfo is a verbose info map shaped as containerd's: the
// kubelet's env in config.envs, and the OCI spec's env with the image's
// own env (imageEnv) under it.
func containerdInfo(kubelet, imageEnv map[string]string) map[string]string {
	type kv struct {
		Key   string `json:"key"`
		Value string `json:"value,omitempty"`
	}
	var envs []kv
	var process []string
	for _, k := range slices.Sorted(maps.Keys(imageEnv)) {
		if _, over := kubelet[k]; !over {
			process = append(process, k+"="+imageEnv[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kubelet)) {
		envs = append(envs, kv{Key: k, Value: kubelet[k]})
		process = append(process, k+"="+kubelet[k])
	}
	doc := map[string]any{
		"sandboxID": "sb", "pid": 42, "snapshotter": "overlayfs", "runtimeType": "io.containerd.runc.v2",
		"config":      map[string]any{"metadata": map[string]any{"name": "app"}, "envs": envs},
		"runtimeSpec": map[string]any{"ociVersion": "1.1.0", "process": map[string]any{"args": []string{"/app"}, "env": process}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return map[string]string{cri.VerboseInfoKey: string(b)}
}

// crioInfo is a verbose info map shaped as CRI-O's: only the OCI spec.
func crioInfo(env ...string) map[string]string {
	b, err := json.Marshal(map[string]any{"sandboxID": "sb", "pid": 42, "privileged": false,
		"runtimeSpec": map[string]any{"process": map[string]any{"env": env}}})
	if err != nil {
		panic(err)
	}
	return map[string]string{cri.VerboseInfoKey: string(b)}
}

// addContainer puts a running instance of name in the fake runtime, made
// with info.
func (f *fixture) addContainer(name, id string, info map[string]string) {
	f.rt.AddContainer(critest.Container{ID: id, SandboxID: "sb", PodUID: pUID, PodNamespace: ns, PodName: pName, Name: name,
		State: runtimeapi.ContainerState_CONTAINER_RUNNING, Info: info})
}

type runtimeapiState = runtimeapi.ContainerState

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

// setState changes the state of instance id in the fake runtime.
func setState(rt *critest.FakeRuntime, id string, s runtimeapiState) {
	c, ok := rt.GetContainer(id)
	if !ok {
		panic("no container " + id)
	}
	c.State = s
	rt.AddContainer(c)
}

// restartDaemon replaces the restarter by a new one on the same runtime and
// pod cache, remembering nothing: the daemon restarted.
func (f *fixture) restartDaemon(t *testing.T) {
	t.Helper()
	r, err := New(Config{Pods: f.pods.Core().V1().Pods().Informer(), Runtime: f.r.runtime, Stopper: f.r.stopper,
		Recorder: f.recorder, Metrics: NewMetrics(), Clock: f.clock})
	require.NoError(t, err)
	t.Cleanup(r.queue.ShutDown)
	f.r = r
}

// createdWith is the kubelet's env of container app made when the pod had
// these label and annotation values.
func createdWith(track, owner string) map[string]string {
	return containerdInfo(map[string]string{"TRACK": track, "OWNER": owner, "PLAIN": "x", "KUBERNETES_SERVICE_HOST": "10.96.0.1"},
		map[string]string{"PATH": "/usr/bin", "GREETING": "hello"})
}
