package podprobe

import (
	"context"
	"encoding/json"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"
)

// ctlHarness is a controller whose informers are not started: the tests
// put objects in their stores and call syncWorkers and writeStatus.
type ctlHarness struct {
	c       *Controller
	clk     *clocktesting.FakeClock
	kruise  *kruisefake.Clientset
	mu      sync.Mutex
	patches [][]byte
	patched chan []byte
}

func newCtlHarness(t *testing.T, npp *appsv1alpha1.NodePodProbe) *ctlHarness {
	h := &ctlHarness{clk: clocktesting.NewFakeClock(t0), kruise: kruisefake.NewSimpleClientset(npp.DeepCopy()),
		patched: make(chan []byte, 100)}
	h.kruise.PrependReactor("patch", "nodepodprobes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		h.mu.Lock()
		h.patches = append(h.patches, p.GetPatch())
		h.mu.Unlock()
		h.patched <- p.GetPatch()
		return false, nil, nil // the tracker applies it
	})
	client := clientset.NewKruise(h.kruise)
	npps := kube.NewInformer(client.NodePodProbes(), &appsv1alpha1.NodePodProbe{}, nil, nil)
	pods := kube.NewInformer(kube.ListerWatcher[*corev1.PodList](nil), &corev1.Pod{}, nil, nil)
	require.NoError(t, npps.GetStore().Add(npp))
	c, err := New(Config{Client: client.NodePodProbes(), NodeName: "node-a", NodePodProbes: npps, Pods: pods,
		Runtime: &fakeExec{}, Clock: h.clk, Rand: func() float64 { return 0.5 },
		NodeAddrs: func() ([]netip.Addr, error) { return nil, nil }, Metrics: NewMetrics()})
	require.NoError(t, err)
	h.c = c
	return h
}

func (h *ctlHarness) nPatches() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.patches)
}

// setSpec puts npp in the informer's store, as a watch event would.
func (h *ctlHarness) setSpec(t *testing.T, npp *appsv1alpha1.NodePodProbe) {
	require.NoError(t, h.c.cfg.NodePodProbes.GetStore().Update(npp))
}

// storeWritten puts the object as the API server holds it in the
// informer's store: the informer caught up.
func (h *ctlHarness) storeWritten(t *testing.T) {
	obj, err := h.kruise.AppsV1alpha1().NodePodProbes().Get(context.Background(), "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, h.c.cfg.NodePodProbes.GetStore().Update(obj))
}

func (h *ctlHarness) worker(t *testing.T, uid, probe string) *worker {
	t.Helper()
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	r, ok := h.c.workers[key{uid: uid, probe: probe}]
	require.True(t, ok, "worker %s/%s", uid, probe)
	return r.w
}

func (h *ctlHarness) nWorkers() int {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return len(h.c.workers)
}

func execProbe(period int32) appsv1alpha1.ContainerProbe {
	return appsv1alpha1.ContainerProbe{Name: "m#idle", ContainerName: "main", Probe: appsv1alpha1.ContainerProbeSpec{
		Probe: corev1.Probe{PeriodSeconds: period, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}}}}}
}

func nppWith(pods ...appsv1alpha1.PodProbe) *appsv1alpha1.NodePodProbe {
	return &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "npp-uid"},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: pods}}
}

func podProbe(uid string, probes ...appsv1alpha1.ContainerProbe) appsv1alpha1.PodProbe {
	return appsv1alpha1.PodProbe{Namespace: "ns", Name: "pod-" + uid, UID: uid, IP: "10.244.0.7", Probes: probes}
}

func decodePatch(t *testing.T, raw []byte) []appsv1alpha1.PodProbeStatus {
	t.Helper()
	var p struct {
		Status struct {
			PodProbeStatuses []appsv1alpha1.PodProbeStatus `json:"podProbeStatuses"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal(raw, &p))
	for i := range p.Status.PodProbeStatuses {
		for j := range p.Status.PodProbeStatuses[i].ProbeStates {
			st := &p.Status.PodProbeStatuses[i].ProbeStates[j]
			st.LastProbeTime = metav1.NewTime(st.LastProbeTime.UTC())
			st.LastTransitionTime = metav1.NewTime(st.LastTransitionTime.UTC())
		}
	}
	return p.Status.PodProbeStatuses
}

// One worker per (pod UID, probe name), however often the spec is read and
// however often an entry is repeated; a changed probe gets a new worker.
func TestWorkersFollowTheSpec(t *testing.T) {
	h := newCtlHarness(t, nppWith(podProbe("u1", execProbe(10), execProbe(10)), podProbe("u1", execProbe(5)), podProbe("u2", execProbe(10))))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.c.syncWorkers(ctx)
	assert.Equal(t, 2, h.nWorkers(), "duplicates make no second worker")
	w1 := h.worker(t, "u1", "m#idle")
	assert.Equal(t, int32(10), w1.job.probe.PeriodSeconds, "the first of duplicates wins")
	h.c.syncWorkers(ctx)
	assert.Same(t, w1, h.worker(t, "u1", "m#idle"), "an unchanged probe keeps its worker")

	h.setSpec(t, nppWith(podProbe("u1", execProbe(3)), podProbe("u2", execProbe(10))))
	h.c.syncWorkers(ctx)
	assert.NotSame(t, w1, h.worker(t, "u1", "m#idle"), "a changed probe gets a new worker")
	assert.Equal(t, int32(3), h.worker(t, "u1", "m#idle").job.probe.PeriodSeconds)

	h.setSpec(t, nppWith(podProbe("u2", execProbe(10))))
	h.c.syncWorkers(ctx)
	assert.Equal(t, 1, h.nWorkers())
	require.NoError(t, h.c.cfg.NodePodProbes.GetStore().Delete(nppWith()))
	h.c.syncWorkers(ctx)
	assert.Zero(t, h.nWorkers(), "no NodePodProbe: no workers")
}

// A status write only when a result changed; entries of pods and probes
// that left the spec are dropped.
func TestStatusWrites(t *testing.T) {
	h := newCtlHarness(t, nppWith(podProbe("u1", execProbe(10)), podProbe("u2", execProbe(10))))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.c.syncWorkers(ctx)
	require.NoError(t, h.c.writeStatus(ctx))
	assert.Zero(t, h.nPatches(), "no results, nothing to write")

	h.worker(t, "u1", "m#idle").report(appsv1alpha1.ProbeSucceeded, "")
	h.worker(t, "u2", "m#idle").report(appsv1alpha1.ProbeFailed, "exit code 1")
	require.NoError(t, h.c.writeStatus(ctx))
	require.Equal(t, 1, h.nPatches())
	got := decodePatch(t, <-h.patched)
	require.Len(t, got, 2)
	assert.Equal(t, appsv1alpha1.PodProbeStatus{Namespace: "ns", Name: "pod-u1", UID: "u1", ProbeStates: []appsv1alpha1.ContainerProbeState{{
		Name: "m#idle", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}}}, got[0])
	assert.Equal(t, "exit code 1", got[1].ProbeStates[0].Message)

	// Steady state: the same results, before and after the informer has
	// caught up, write nothing.
	h.worker(t, "u1", "m#idle").report(appsv1alpha1.ProbeSucceeded, "")
	require.NoError(t, h.c.writeStatus(ctx))
	h.storeWritten(t)
	require.NoError(t, h.c.writeStatus(ctx))
	assert.Equal(t, 1, h.nPatches(), "zero writes in steady state")

	// A message change is written; the transition time stays.
	h.clk.Step(time.Second)
	h.worker(t, "u2", "m#idle").report(appsv1alpha1.ProbeFailed, "timed out after 1s")
	require.NoError(t, h.c.writeStatus(ctx))
	got = decodePatch(t, <-h.patched)
	assert.Equal(t, metav1.NewTime(t0), got[1].ProbeStates[0].LastTransitionTime)
	assert.Equal(t, metav1.NewTime(t0.Add(time.Second)), got[1].ProbeStates[0].LastProbeTime)

	// u2 leaves the spec: its worker stops and its entry goes.
	h.setSpec(t, nppWith(podProbe("u1", execProbe(10))))
	h.c.syncWorkers(ctx)
	require.NoError(t, h.c.writeStatus(ctx))
	got = decodePatch(t, <-h.patched)
	require.Len(t, got, 1)
	assert.Equal(t, "u1", got[0].UID)

	// Everything leaves: the list is cleared (null), not left as it was.
	h.setSpec(t, nppWith())
	h.c.syncWorkers(ctx)
	require.NoError(t, h.c.writeStatus(ctx))
	assert.JSONEq(t, `{"status":{"podProbeStatuses":null}}`, string(<-h.patched))
	stored, err := h.kruise.AppsV1alpha1().NodePodProbes().Get(ctx, "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, stored.Status.PodProbeStatuses)
}

// A restarted daemon counts from nothing but leaves the old entries until
// its workers have results: no write, no marks taken off meanwhile.
func TestRestartKeepsOldStatusUntilResults(t *testing.T) {
	npp := nppWith(podProbe("u1", execProbe(10)), podProbe("u2", execProbe(10)))
	old := appsv1alpha1.ContainerProbeState{Name: "m#idle", State: appsv1alpha1.ProbeSucceeded,
		LastProbeTime: metav1.NewTime(t0.Add(-time.Hour)), LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}
	npp.Status.PodProbeStatuses = []appsv1alpha1.PodProbeStatus{
		{Namespace: "ns", Name: "pod-u1", UID: "u1", ProbeStates: []appsv1alpha1.ContainerProbeState{old}},
		{Namespace: "ns", Name: "pod-u2", UID: "u2", ProbeStates: []appsv1alpha1.ContainerProbeState{old}},
	}
	h := newCtlHarness(t, npp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.c.syncWorkers(ctx)
	require.NoError(t, h.c.writeStatus(ctx))
	assert.Zero(t, h.nPatches())
	_, ok := h.worker(t, "u1", "m#idle").current()
	assert.False(t, ok, "the worker does not take the old result as its own")

	h.worker(t, "u1", "m#idle").report(appsv1alpha1.ProbeFailed, "exit code 1")
	require.NoError(t, h.c.writeStatus(ctx))
	got := decodePatch(t, <-h.patched)
	require.Len(t, got, 2)
	assert.Equal(t, appsv1alpha1.ProbeFailed, got[0].ProbeStates[0].State)
	assert.Equal(t, old, got[1].ProbeStates[0], "u2 keeps its entry until its worker reports")
}

// Many flips within the write delay make one write, soon after the flips.
func TestFlipsCoalesceIntoOneWrite(t *testing.T) {
	var pods []appsv1alpha1.PodProbe
	for _, uid := range []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9"} {
		pods = append(pods, podProbe(uid, execProbe(10)))
	}
	h := newCtlHarness(t, nppWith(pods...))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.c.syncWorkers(ctx)
	for _, pp := range pods {
		w := h.worker(t, pp.UID, "m#idle")
		w.report(appsv1alpha1.ProbeSucceeded, "")
		w.report(appsv1alpha1.ProbeFailed, "exit code 1")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.c.Run(ctx)
	}()
	h.clk.Step(DefaultWriteDelay)
	got := decodePatch(t, <-h.patched)
	require.Len(t, got, 10, "every flip in the one write")
	for _, ps := range got {
		assert.Equal(t, appsv1alpha1.ProbeFailed, ps.ProbeStates[0].State)
	}
	assert.Equal(t, 1, h.nPatches())
	cancel()
	<-done
	assert.Zero(t, h.nWorkers(), "Run stops its workers when it ends")
}

func TestStatusPatchRetriesWithBackoff(t *testing.T) {
	h := newCtlHarness(t, nppWith(podProbe("u1", execProbe(10))))
	h.kruise.PrependReactor("patch", "nodepodprobes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, assert.AnError
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.c.syncWorkers(ctx)
	h.worker(t, "u1", "m#idle").report(appsv1alpha1.ProbeSucceeded, "")
	err := h.c.writeStatus(ctx)
	assert.ErrorIs(t, err, assert.AnError)
	assert.Nil(t, h.c.written, "a failed write is not taken as written")
}
