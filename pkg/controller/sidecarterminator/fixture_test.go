package sidecarterminator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	testNS   = "default"
	podName  = "job-abc"
	podUID   = types.UID("pod-uid-1")
	nodeName = "node-a"
	vkNode   = "vk-node"
	podKey   = testNS + "/" + podName
	crrName  = "sidecar-termination-" + string(podUID)
)

// now is the fake clock's time in every test.
var now = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// ---- pods ----

// state is what a container's status says (nil: no status at all).
type state func(name string) *corev1.ContainerStatus

func running() state {
	return func(name string) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{
			Name: name, ContainerID: "containerd://" + name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Hour))}},
		}
	}
}

// exited is a container that terminated with code, a minute ago.
func exited(code int32) state { return exitedAt(code, now.Add(-time.Minute)) }

func exitedAt(code int32, at time.Time) state {
	return func(name string) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{
			Name: name, ContainerID: "containerd://" + name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, FinishedAt: metav1.NewTime(at), ContainerID: "containerd://" + name,
			}},
		}
	}
}

// waiting is a container not started (yet or again): no container ID.
func waiting() state {
	return func(name string) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{
			Name:  name,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		}
	}
}

// noStatus leaves the container out of the pod's status.
func noStatus() state { return func(string) *corev1.ContainerStatus { return nil } }

// newPod is a Running pod on nodeName with the restart policy and, but for
// what mods add, no containers.
func newPod(policy corev1.RestartPolicy, mods ...gen.PodModifier) *corev1.Pod {
	p := gen.Pod(podName, gen.SetPodNamespace(testNS), gen.SetPodUID(podUID), gen.SetPodResourceVersion("7"),
		gen.SetPodRestartPolicy(policy), gen.SetPodNodeName(nodeName), gen.SetPodPhase(corev1.PodRunning))
	return gen.PodFrom(p, mods...)
}

func envTrue() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "true"}}
}

func envImage(image string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: EnvTerminateSidecarWithImage, Value: image}}
}

// withContainer adds a regular container with the env and status.
func withContainer(name string, env []corev1.EnvVar, st state) gen.PodModifier {
	return func(p *corev1.Pod) {
		gen.AddPodContainer(corev1.Container{Name: name, Image: name + ":v1", Env: env})(p)
		if s := st(name); s != nil {
			gen.SetPodContainerStatus(*s)(p)
		}
	}
}

// withMain adds an unmarked container.
func withMain(name string, st state) gen.PodModifier { return withContainer(name, nil, st) }

// withSidecar adds a container marked with KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true.
func withSidecar(name string, st state) gen.PodModifier { return withContainer(name, envTrue(), st) }

// withSidecarImage adds a container marked with the _WITH_IMAGE env only.
func withSidecarImage(name, image string, st state) gen.PodModifier {
	return withContainer(name, envImage(image), st)
}

// withInit adds an init container (native sidecar when always) with the env.
func withInit(name string, always bool, env []corev1.EnvVar) gen.PodModifier {
	c := corev1.Container{Name: name, Image: name + ":v1", Env: env}
	if always {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return gen.AddPodInitContainer(c)
}

// deleting marks the pod as being deleted since now.
var deleting = gen.SetPodDeletionTimestamp(now)

// withCondition adds the SidecarTerminated condition with the status, become so at.
func withCondition(status corev1.ConditionStatus, at time.Time) gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{
		Type: ConditionSidecarTerminated, Status: status, Reason: reasonMainsSucceeded,
		LastTransitionTime: metav1.NewTime(at),
	})
}

// withRecorded is withCondition(True, at).
func withRecorded(at time.Time) gen.PodModifier { return withCondition(corev1.ConditionTrue, at) }

// ---- nodes ----

// virtualKubelet labels a node as a virtual-kubelet one.
var virtualKubelet = gen.AddNodeLabel(appsv1alpha1.VirtualKubeletLabel, appsv1alpha1.VirtualKubeletValue)

// ---- fixture ----

type fixture struct {
	podIndexer cache.Indexer
	ctrl       *Controller
	kube       *fake.Clientset
	kruise     *kruisefake.Clientset
	clock      *clocktesting.FakeClock
	recorder   *record.FakeRecorder
}

// objects split by where they live: the API server and the caches (pods,
// nodes), the caches only (cacheOnly), or the API server only (apiOnly).
type objects struct {
	mechanism Mechanism
	pods      []*corev1.Pod
	cacheOnly []*corev1.Pod
	apiOnly   []*corev1.Pod
	nodes     []*corev1.Node
	crrs      []*appsv1alpha1.ContainerRecreateRequest
}

func newFixture(t *testing.T, o objects) *fixture {
	t.Helper()
	var kubeObjs, kruiseObjs []runtime.Object
	for _, p := range o.pods {
		kubeObjs = append(kubeObjs, p.DeepCopy())
	}
	for _, p := range o.apiOnly {
		kubeObjs = append(kubeObjs, p.DeepCopy())
	}
	for _, n := range o.nodes {
		kubeObjs = append(kubeObjs, n)
	}
	for _, c := range o.crrs {
		kruiseObjs = append(kruiseObjs, c)
	}
	f := &fixture{
		kube:     fake.NewClientset(kubeObjs...),
		kruise:   kruisefake.NewSimpleClientset(kruiseObjs...),
		clock:    clocktesting.NewFakeClock(now),
		recorder: record.NewFakeRecorder(50),
	}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	ctrl, err := New(Config{
		Config:    ctrlbase.Config{Client: f.kube, KruiseClient: f.kruise, Recorder: f.recorder, Clock: f.clock},
		Pods:      factory.Core().V1().Pods(),
		Nodes:     factory.Core().V1().Nodes(),
		Mechanism: o.mechanism,
	})
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	// The caches are filled by hand: no informer runs, nothing races.
	for _, p := range append(append([]*corev1.Pod{}, o.pods...), o.cacheOnly...) {
		require.NoError(t, factory.Core().V1().Pods().Informer().GetIndexer().Add(p))
	}
	for _, n := range o.nodes {
		require.NoError(t, factory.Core().V1().Nodes().Informer().GetIndexer().Add(n))
	}
	f.kube.ClearActions()
	f.kruise.ClearActions()
	f.ctrl = ctrl
	f.podIndexer = factory.Core().V1().Pods().Informer().GetIndexer()
	return f
}

// cacheLive copies the API server's pod into the cache, as its watch event
// would.
func (f *fixture) cacheLive(t *testing.T) *corev1.Pod {
	t.Helper()
	live := f.getPod(t)
	require.NoError(t, f.podIndexer.Update(live))
	return live
}

func (f *fixture) sync(t *testing.T) (time.Duration, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	return f.ctrl.sync(ctx, podKey)
}

// mustSync syncs podKey and requires no error.
func (f *fixture) mustSync(t *testing.T) time.Duration {
	t.Helper()
	after, err := f.sync(t)
	require.NoError(t, err)
	return after
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

// patches lists the pod patches sent, in order.
func (f *fixture) patches() []k8stesting.PatchAction {
	var out []k8stesting.PatchAction
	for _, a := range f.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetVerb() == "patch" {
			out = append(out, p)
		}
	}
	return out
}

func (f *fixture) events() []string {
	return gen.DrainEvents(f.recorder)
}

func (f *fixture) listCRRs(t *testing.T) []appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	l, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(testNS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return l.Items
}

func (f *fixture) getPod(t *testing.T) *corev1.Pod {
	t.Helper()
	p, err := f.kube.CoreV1().Pods(testNS).Get(context.Background(), podName, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// patchBody is the decoded JSON of a strategic-merge patch the controller sent.
type patchBody struct {
	Metadata struct {
		UID         types.UID         `json:"uid"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status *struct {
		Phase      corev1.PodPhase       `json:"phase"`
		Conditions []corev1.PodCondition `json:"conditions"`
	} `json:"status"`
	Spec *struct {
		Containers []map[string]string `json:"containers"`
	} `json:"spec"`
}

func decodePatch(t *testing.T, a k8stesting.PatchAction) patchBody {
	t.Helper()
	require.Equal(t, types.StrategicMergePatchType, a.GetPatchType())
	var b patchBody
	require.NoError(t, json.Unmarshal(a.GetPatch(), &b), "%s", a.GetPatch())
	return b
}
