package crrexec

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	ns      = "default"
	pName   = "web"
	pUID    = "pod-uid"
	podKeyT = ns + "/" + pName
	mainID  = "aaa"
	sideID  = "bbb"
)

var tNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// fakeRuntime is an in-memory Runtime that records the calls it gets.
type fakeRuntime struct {
	mu         sync.Mutex
	containers []cri.Container
	ops        []string
	stops      []time.Duration
	// execFn, when set, answers ExecSync.
	execFn func(ctx context.Context) (cri.ExecResult, error)
	// stopErr fails StopContainer for these IDs.
	stopErr map[string]error
}

func (r *fakeRuntime) PodContainers(_ context.Context, podUID string) ([]cri.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The pods of the fixture: runningPod, and "other" of TestLongKillDoesNotHoldTheWorker.
	if podUID != pUID && podUID != "other-uid" {
		return nil, fmt.Errorf("unexpected pod UID %q", podUID)
	}
	var out []cri.Container
	for _, c := range r.containers {
		if c.PodUID == podUID {
			out = append(out, c)
		}
	}
	return out, nil
}

func (r *fakeRuntime) StopContainer(_ context.Context, id string, timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, "stop "+id)
	r.stops = append(r.stops, timeout)
	if err := r.stopErr[id]; err != nil {
		return err
	}
	for i := range r.containers {
		if r.containers[i].ID == id {
			r.containers[i].State = cri.ContainerExited
			r.containers[i].StatusKnown = true
			r.containers[i].ExitCode = 143
		}
	}
	return nil
}

func (r *fakeRuntime) ExecSync(ctx context.Context, id string, cmd []string, _ time.Duration) (cri.ExecResult, error) {
	r.mu.Lock()
	r.ops = append(r.ops, "exec "+id)
	fn := r.execFn
	r.mu.Unlock()
	if fn != nil {
		return fn(ctx)
	}
	return cri.ExecResult{}, nil
}

func (r *fakeRuntime) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ops...)
}

// restart models the kubelet starting instance newID of name after the old
// one exited.
func (r *fakeRuntime) restart(name, newID string, attempt uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers = append(r.containers, cri.Container{ID: newID, Name: name, Attempt: attempt, State: cri.ContainerRunning, PodUID: pUID})
}

type fixture struct {
	ex       *Executor
	rt       *fakeRuntime
	kruise   *kruisefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	pods     informers.SharedInformerFactory
	metrics  *Metrics
}

func newFixture(t *testing.T, pod *corev1.Pod, crrs ...*appsv1alpha1.ContainerRecreateRequest) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, c := range crrs {
		objs = append(objs, c)
	}
	f := &fixture{
		rt:       &fakeRuntime{containers: criFor(pod)},
		kruise:   kruisefake.NewSimpleClientset(objs...),
		clock:    clocktesting.NewFakeClock(tNow),
		recorder: record.NewFakeRecorder(100),
		metrics:  NewMetrics(),
	}
	podClient := fake.NewClientset(pod)
	f.pods = informers.NewSharedInformerFactory(podClient, 0)
	crrFactory := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	ex, err := New(Config{
		KruiseClient: clientset.NewKruise(f.kruise),
		CRRs:         crrFactory.Apps().V1alpha1().ContainerRecreateRequests().Informer(),
		Pods:         f.pods.Core().V1().Pods().Informer(),
		Runtime:      f.rt,
		Recorder:     f.recorder,
		Metrics:      f.metrics,
		Clock:        f.clock,
	})
	require.NoError(t, err)
	t.Cleanup(ex.queue.ShutDown)
	f.ex = ex
	// The caches are filled by hand: no informer runs, nothing races.
	f.setPod(t, pod)
	for _, c := range crrs {
		require.NoError(t, ex.crrIndexer.Add(c))
	}
	return f
}

// setPod puts pod in the cache as the daemon's informer would: slimmed to
// the fields the daemon reads (kube.SlimPod), so that every test of the
// executor fails if it comes to need a field the cache drops.
func (f *fixture) setPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	slim, err := kube.SlimPod(pod.DeepCopy())
	require.NoError(t, err)
	require.NoError(t, f.pods.Core().V1().Pods().Informer().GetIndexer().Update(slim))
}

// refresh copies the API server's CRRs into the cache, as the informer would.
func (f *fixture) refresh(t *testing.T) {
	t.Helper()
	list, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range list.Items {
		require.NoError(t, f.ex.crrIndexer.Update(&list.Items[i]))
	}
}

// sync syncs the pod as the queue would (see syncAll), expecting no error.
func (f *fixture) sync(t *testing.T) time.Duration {
	t.Helper()
	after, err := f.syncAll(t)
	require.NoError(t, err)
	return after
}

// syncAll syncs the pod as the queue would: a sync that starts a kill
// (which runs in the background) is followed, once the kill has returned,
// by the sync its end queues, until a sync starts none or fails.
func (f *fixture) syncAll(t *testing.T) (time.Duration, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	for {
		kills := f.ex.killsStarted.Load()
		after, err := f.ex.syncPod(ctx, podKeyT)
		f.refresh(t)
		if err != nil || f.ex.killsStarted.Load() == kills {
			return after, err
		}
		f.ex.waitKills()
	}
}

func (f *fixture) get(t *testing.T, name string) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	crr, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return crr
}

func (f *fixture) completedTotal(outcome string) float64 {
	var m dto.Metric
	if err := f.metrics.completed.WithLabelValues(outcome).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func (f *fixture) recreateObservations() uint64 {
	var m dto.Metric
	if err := f.metrics.duration.Write(&m); err != nil {
		panic(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func (f *fixture) events() []string {
	return gen.DrainEvents(f.recorder)
}

// states maps container name to "Phase" or "Phase/killed".
func states(crr *appsv1alpha1.ContainerRecreateRequest) map[string]string {
	out := map[string]string{}
	for _, st := range crr.Status.ContainerRecreateStates {
		v := string(st.Phase)
		if st.IsKilled {
			v += "/killed"
		}
		out[st.Name] = v
	}
	return out
}

// runningPod has containers main (instance aaa) and sidecar (bbb), both
// running and ready since a minute ago, changed by mods.
func runningPod(mods ...gen.PodModifier) *corev1.Pod {
	p := gen.Pod(pName, gen.SetPodNamespace(ns), gen.SetPodUID(pUID), gen.SetPodNodeName("node-a"),
		gen.SetPodRestartPolicy(corev1.RestartPolicyAlways),
		gen.AddPodContainer(corev1.Container{Name: "main"}), gen.AddPodContainer(corev1.Container{Name: "sidecar"}),
		gen.SetPodPhase(corev1.PodRunning), gen.SetPodIP("10.1.0.5"),
		gen.SetPodContainerStatus(runningStatus("main", "containerd://"+mainID, 0, true, tNow.Add(-time.Minute))),
		gen.SetPodContainerStatus(runningStatus("sidecar", "containerd://"+sideID, 0, true, tNow.Add(-time.Minute))))
	return gen.PodFrom(p, mods...)
}

// runningStatus is the status of a running container.
func runningStatus(name, id string, restarts int32, ready bool, started time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, ContainerID: id, RestartCount: restarts, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
	}
}

// criFor is the runtime's view of the pod's current instances.
func criFor(p *corev1.Pod) []cri.Container {
	var out []cri.Container
	for _, st := range p.Status.ContainerStatuses {
		out = append(out, cri.Container{
			ID: cri.RawContainerID(st.ContainerID), Name: st.Name, Attempt: uint32(st.RestartCount),
			State: cri.ContainerRunning, PodUID: pUID,
		})
	}
	return out
}

// newCRR is an admitted request, created age before tNow, for containers
// of runningPod.
func newCRR(name string, age time.Duration, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	mods := []gen.CRRModifier{gen.SetCRRNamespace(ns), gen.SetCRRUID(types.UID("uid-" + name)), gen.SetCRRResourceVersion("5"),
		gen.SetCRRCreationTimestamp(tNow.Add(-age)), gen.SetCRRRoutingLabels("node-a", pUID), gen.SetCRRPodName(pName),
		gen.SetCRRFailurePolicy(appsv1alpha1.ContainerRecreateRequestFailurePolicyFail), gen.SetCRRAdmitted(tNow.Add(-age), ""),
		gen.SetCRRContainers(containers...)}
	ids := map[string]string{"main": mainID, "sidecar": sideID}
	for _, c := range containers {
		mods = append(mods, gen.SetCRRContainerContext(c, appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://" + ids[c]}))
	}
	return gen.CRR(name, mods...)
}
