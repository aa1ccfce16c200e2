package enhancedliveness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// fixture is the controller over fake clients whose informer stores the test fills itself.
type fixture struct {
	t        *testing.T
	c        *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	pods     informers.SharedInformerFactory
	kinf     kruiseinformers.SharedInformerFactory
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	metrics  *prometheus.Registry
}

func newFixture(t *testing.T, pods ...*corev1.Pod) *fixture {
	t.Helper()
	f := &fixture{t: t, kruise: kruisefake.NewSimpleClientset(), clock: clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(50), metrics: prometheus.NewRegistry()}
	f.kube = fake.NewClientset()
	for _, p := range pods {
		require.NoError(t, f.kube.Tracker().Add(p))
	}
	f.pods = informers.NewSharedInformerFactory(f.kube, 0)
	f.kinf = kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	c, err := New(Config{
		Config:        ctrlbase.Config{Client: f.kube, KruiseClient: f.kruise, Recorder: f.recorder, Clock: f.clock},
		Pods:          f.pods.Core().V1().Pods(),
		NodePodProbes: f.kinf.Apps().V1alpha1().NodePodProbes(),
		CRRs:          f.kinf.Apps().V1alpha1().ContainerRecreateRequests(),
		Metrics:       f.metrics,
	})
	require.NoError(t, err)
	f.c = c
	for _, p := range pods {
		f.putPod(p)
	}
	return f
}

func (f *fixture) putPod(p *corev1.Pod) {
	require.NoError(f.t, f.pods.Core().V1().Pods().Informer().GetIndexer().Update(p))
}

// probes sets node-1's NodePodProbe results: pod name -> state and transition time of "app".
func (f *fixture) probes(results map[*corev1.Pod]appsv1alpha1.ContainerProbeState) {
	npp := &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	for p, st := range results {
		st.Name = nodeprobe.LivenessProbeName("app")
		npp.Status.PodProbeStatuses = append(npp.Status.PodProbeStatuses, appsv1alpha1.PodProbeStatus{
			Name: p.Name, Namespace: p.Namespace, UID: string(p.UID), ProbeStates: []appsv1alpha1.ContainerProbeState{st}})
	}
	require.NoError(f.t, f.kinf.Apps().V1alpha1().NodePodProbes().Informer().GetIndexer().Update(npp))
}

func failed(at time.Time) appsv1alpha1.ContainerProbeState {
	return appsv1alpha1.ContainerProbeState{State: appsv1alpha1.ProbeFailed, LastTransitionTime: metav1.NewTime(at)}
}

func (f *fixture) sync(key string) time.Duration {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	after, err := f.c.sync(ctx, key)
	require.NoError(f.t, err)
	return after
}

// created are the CRRs created so far, by name.
func (f *fixture) created() []*appsv1alpha1.ContainerRecreateRequest {
	list, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(f.t, err)
	var out []*appsv1alpha1.ContainerRecreateRequest
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// refresh copies the API's pods and CRRs into the informer stores, as the watches would.
func (f *fixture) refresh() {
	pods, err := f.kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range pods.Items {
		f.putPod(&pods.Items[i])
	}
	for _, crr := range f.created() {
		require.NoError(f.t, f.kinf.Apps().V1alpha1().ContainerRecreateRequests().Informer().GetIndexer().Update(crr))
	}
}

func (f *fixture) complete(crr *appsv1alpha1.ContainerRecreateRequest) {
	crr = crr.DeepCopy()
	crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
	_, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(context.Background(), crr, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

var cloneSetRef = metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs-uid", Controller: ptr.To(true)}

// livePod is a Ready pod of CloneSet web on node-1 whose liveness kruise carries out.
func livePod(name string) *corev1.Pod {
	return gen.Pod(name, gen.SetPodNamespace("default"), gen.SetPodUID(types.UID("uid-"+name)), gen.SetPodNodeName("node-1"),
		gen.SetPodOwnerReferences(cloneSetRef), gen.SetPodPhase(corev1.PodRunning),
		gen.AddPodAnnotations(map[string]string{
			appsv1alpha1.UsingEnhancedLivenessAnnotation: "true",
			appsv1alpha1.ContainerProbeContextAnnotation: `[{"name":"app","livenessProbe":{"tcpSocket":{"port":80}}}]`,
		}),
		gen.AddPodContainer(corev1.Container{Name: "app", Image: "app:1"}),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
}

const key = "default/cs-uid"

// One request per failure: created once, not again while it runs nor after it completed for the
// same failure; a newer failure (after the back-off) gets a new one.
func TestRestartOncePerFailure(t *testing.T) {
	pods := []*corev1.Pod{livePod("web-0"), livePod("web-1"), livePod("web-2")}
	f := newFixture(t, pods...)
	assert.Equal(t, key, WorkloadKey(pods[0]))
	f.probes(map[*corev1.Pod]appsv1alpha1.ContainerProbeState{pods[1]: failed(t0.Add(-time.Second))})

	assert.Zero(t, f.sync(key))
	crrs := f.created()
	require.Len(t, crrs, 1)
	crr := crrs[0]
	assert.Equal(t, "web-1", crr.Spec.PodName)
	assert.Equal(t, []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "app"}}, crr.Spec.Containers)
	assert.Equal(t, "true", crr.Labels[LabelEnhancedLiveness])
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "uid-web-1"}}, crr.OwnerReferences)
	assert.Equal(t, ptr.To(crrTTL), crr.Spec.TTLSecondsAfterFinished)
	assert.Equal(t, ptr.To(int64(30+300)), crr.Spec.ActiveDeadlineSeconds)
	assert.True(t, strings.HasPrefix(crr.Name, "web-1-liveness-"))
	assert.Equal(t, 1.0, value(t, f.c.restarts.WithLabelValues()))
	assert.Contains(t, <-f.recorder.Events, ReasonRestart)

	pod, err := f.kube.CoreV1().Pods("default").Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"app":{"at":"2026-01-01T12:00:00Z","delaySeconds":10}}`, pod.Annotations[RestartsAnnotation])

	// In flight: the caches now show the request and the recorded restart.
	f.refresh()
	f.clock.Step(time.Minute)
	f.sync(key)
	assert.Len(t, f.created(), 1, "not twice while in flight")

	// A stale pod cache (the restart not recorded yet): the request's name finds the one there.
	f.putPod(pods[1])
	f.complete(crr)
	f.refresh()
	f.putPod(pods[1])
	f.sync(key)
	assert.Len(t, f.created(), 1, "the same failure is never answered twice")
	assert.Equal(t, 1.0, value(t, f.c.restarts.WithLabelValues()))

	// Completed, the probe still shows the old failure: nothing.
	f.refresh()
	f.sync(key)
	assert.Len(t, f.created(), 1)

	// A newer failure: a second request.
	f.probes(map[*corev1.Pod]appsv1alpha1.ContainerProbeState{pods[1]: failed(f.clock.Now().Add(time.Second))})
	f.clock.Step(time.Minute) // past the back-off
	f.sync(key)
	assert.Len(t, f.created(), 2)
	assert.Equal(t, 2.0, value(t, f.c.restarts.WithLabelValues()))
}

// A newer failure within the back-off is held, and the workload requeued when it ends.
func TestBackoffRequeues(t *testing.T) {
	pod := livePod("web-0")
	f := newFixture(t, pod, livePod("web-1"), livePod("web-2"))
	f.probes(map[*corev1.Pod]appsv1alpha1.ContainerProbeState{pod: failed(t0.Add(-time.Second))})
	f.sync(key)
	f.refresh()
	f.complete(f.created()[0])
	f.refresh()
	f.probes(map[*corev1.Pod]appsv1alpha1.ContainerProbeState{pod: failed(t0.Add(3 * time.Second))})
	f.clock.Step(4 * time.Second)
	assert.Equal(t, 6*time.Second, f.sync(key))
	assert.Len(t, f.created(), 1)
	assert.Equal(t, 1.0, value(t, f.c.held.WithLabelValues(HeldBackoff)))
	f.clock.Step(6 * time.Second)
	assert.Zero(t, f.sync(key))
	assert.Len(t, f.created(), 2)
	assert.Equal(t, 0.0, value(t, f.c.held.WithLabelValues(HeldBackoff)))
}

// Most of a workload failing at once: no request, one Warning on the CloneSet (rate-limited).
func TestSharedOutageWarnsTheOwner(t *testing.T) {
	var pods []*corev1.Pod
	results := map[*corev1.Pod]appsv1alpha1.ContainerProbeState{}
	for _, n := range []string{"web-0", "web-1", "web-2", "web-3"} {
		p := livePod(n)
		pods = append(pods, p)
		if n != "web-3" {
			results[p] = failed(t0)
		}
	}
	f := newFixture(t, pods...)
	f.probes(results)
	f.sync(key)
	assert.Empty(t, f.created())
	assert.Equal(t, 3.0, value(t, f.c.held.WithLabelValues(HeldSharedOutage)))
	require.Len(t, f.recorder.Events, 1)
	assert.Contains(t, <-f.recorder.Events, "Warning "+ReasonSharedOutage+" 3 of 4 pods")
	f.clock.Step(time.Minute)
	f.sync(key)
	assert.Empty(t, f.recorder.Events, "rate-limited")
	f.clock.Step(outageEventEvery)
	f.sync(key)
	assert.Len(t, f.recorder.Events, 1)

	// Gone: the gauge forgets the workload.
	for _, p := range pods {
		require.NoError(t, f.pods.Core().V1().Pods().Informer().GetIndexer().Delete(p))
	}
	f.sync(key)
	assert.Equal(t, 0.0, value(t, f.c.held.WithLabelValues(HeldSharedOutage)))
}

// Only pods whose probes the webhook moved are looked at; the budget annotation is read.
func TestPodsAndBudgetRead(t *testing.T) {
	plain := livePod("plain")
	delete(plain.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	assert.Nil(t, must(indexPod(plain)))

	var pods []*corev1.Pod
	results := map[*corev1.Pod]appsv1alpha1.ContainerProbeState{}
	for i := range 10 {
		p := livePod("web-" + string(rune('a'+i)))
		p.Annotations[MaxUnavailableAnnotation] = "20%"
		pods = append(pods, p)
		if i < 4 {
			results[p] = failed(t0.Add(time.Duration(i) * time.Second))
		}
	}
	f := newFixture(t, pods...)
	f.probes(results)
	f.sync(key)
	assert.Len(t, f.created(), 2, "20% of 10")
	assert.Equal(t, 2.0, value(t, f.c.held.WithLabelValues(HeldBudget)))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// value reads a counter's or gauge's value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
