package coexist

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const waitFor = 5 * time.Second

// fixture runs a Guard on a fake clientset's node-scoped pod informer.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	recorder *record.FakeRecorder
	guard    *Guard
	alone    chan error
}

func newFixture(t *testing.T, podName string, pods ...*corev1.Pod) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	objs := make([]runtime.Object, 0, len(pods))
	for _, p := range pods {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	f := &fixture{t: t, ctx: ctx, client: client, recorder: record.NewFakeRecorder(100), alone: make(chan error, 1)}
	f.guard = New(Config{Node: node, Namespace: ourNS, Name: podName, Recorder: f.recorder})

	// The daemon scopes its informer by the field selector
	// spec.nodeName=<node>; the fake clientset ignores field selectors, so
	// pods on other nodes reach the guard here, which must skip them.
	// It caches slimmed pods, as the daemon's informer does.
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	require.NoError(t, podInformer.SetTransform(kube.SlimPod))
	require.NoError(t, f.guard.Watch(ctx, podInformer))
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	go func() { f.alone <- f.guard.WaitAlone(ctx) }()
	return f
}

func (f *fixture) create(p *corev1.Pod) {
	f.t.Helper()
	_, err := f.client.CoreV1().Pods(p.Namespace).Create(f.ctx, p, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

func (f *fixture) update(p *corev1.Pod) {
	f.t.Helper()
	_, err := f.client.CoreV1().Pods(p.Namespace).Update(f.ctx, p, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

func (f *fixture) delete(p *corev1.Pod) {
	f.t.Helper()
	require.NoError(f.t, f.client.CoreV1().Pods(p.Namespace).Delete(f.ctx, p.Name, metav1.DeleteOptions{}))
}

// waitAlone waits until WaitAlone returned and returns its error.
func (f *fixture) waitAlone() error {
	f.t.Helper()
	select {
	case err := <-f.alone:
		return err
	case <-time.After(waitFor):
		f.t.Fatalf("WaitAlone did not return; current conflicts: %v", f.guard.Current())
		return nil
	}
}

// eventuallyConflicts waits until the guard sees exactly keys.
func (f *fixture) eventuallyConflicts(keys ...string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		got := f.guard.Current()
		if len(got) != len(keys) {
			return false
		}
		for i, c := range got {
			if c.Key() != keys[i] {
				return false
			}
		}
		return f.guard.Check(nil) != nil || len(keys) == 0
	}, waitFor, 5*time.Millisecond, "want conflicts %v, have %v", keys, f.guard.Current())
}

func podListCalls(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if _, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

func openKruisePod() *corev1.Pod {
	return makePod("kruise-system", "kruise-daemon-ok1", openKruiseLabels, openKruiseChart)
}

func TestGuardWaitsUntilOpenKruiseDaemonIsGone(t *testing.T) {
	ok := openKruisePod()
	f := newFixture(t, ourName, ourPod(), ok, makePod("default", "web"))

	f.eventuallyConflicts("kruise-system/kruise-daemon-ok1")
	err := f.guard.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `kruise-daemon does not act on node "node-a" while another node daemon runs there: `+
		`pod kruise-system/kruise-daemon-ok1 is OpenKruise's kruise-daemon (label control-plane=daemon, container "daemon" runs /kruise-daemon)`)
	assert.Contains(t, err.Error(), "uninstall OpenKruise's kruise-daemon, or turn it off (OpenKruise feature gate KruiseDaemon=false)")
	select {
	case err := <-f.alone:
		t.Fatalf("WaitAlone returned while OpenKruise's daemon runs: %v", err)
	default:
	}

	// Status changes of the same pod are not reported again.
	ok.Status.Phase = corev1.PodRunning
	ok.Status.Message = "still here"
	f.update(ok)
	f.create(makePod("default", "web-2"))
	f.eventuallyConflicts("kruise-system/kruise-daemon-ok1")

	// Being deleted is not enough: gone is.
	terminating(ok)
	f.update(ok)
	f.eventuallyConflicts("kruise-system/kruise-daemon-ok1")
	f.delete(ok)
	require.NoError(t, f.waitAlone())
	require.NoError(t, f.guard.Check(nil))

	evs := gen.DrainEvents(f.recorder)
	require.Len(t, evs, 1, "one Event per conflicting pod: %v", evs)
	assert.True(t, strings.HasPrefix(evs[0], "Warning ConflictingDaemon Pod kruise-system/kruise-daemon-ok1 is OpenKruise's kruise-daemon"), evs[0])
	assert.Contains(t, evs[0], "kruise-daemon does not act on node node-a while it runs")
	assert.Equal(t, 1, podListCalls(f.client), "only the informer's initial list")
}

func TestGuardAloneAtOnce(t *testing.T) {
	cases := []struct {
		name    string
		podName string
		pods    []*corev1.Pod
	}{
		{name: "only ourselves", podName: ourName, pods: []*corev1.Pod{ourPod(), makePod("default", "web")}},
		{
			name: "old pod of our DaemonSet (rolling update)", podName: ourName,
			pods: []*corev1.Pod{ourPod(), makePod(ourNS, "kruise-daemon-old", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", ourDSUID), terminating)},
		},
		{
			name: "completed OpenKruise daemon", podName: ourName,
			pods: []*corev1.Pod{ourPod(), makePod("kruise-system", "okd", openKruiseLabels, openKruiseChart, gen.SetPodPhase(corev1.PodSucceeded))},
		},
		{
			name: "OpenKruise daemon on another node", podName: ourName,
			pods: []*corev1.Pod{ourPod(), makePod("kruise-system", "okd", openKruiseLabels, openKruiseChart, gen.SetPodNodeName("node-b"))},
		},
		{
			name: "pod name unknown, other kruise DaemonSet not judged",
			pods: []*corev1.Pod{ourPod(), makePod("k2", "kd", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", "ds-other"))},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.podName, tc.pods...)
			require.NoError(t, f.waitAlone())
			require.NoError(t, f.guard.Check(nil))
			assert.Empty(t, gen.DrainEvents(f.recorder))
		})
	}
}

func TestGuardStopsOnConflictWhileRunning(t *testing.T) {
	cases := []struct {
		name    string
		pod     *corev1.Pod
		wantErr string
	}{
		{
			name:    "OpenKruise daemon appears",
			pod:     openKruisePod(),
			wantErr: `another node daemon started on node "node-a": pod kruise-system/kruise-daemon-ok1 is OpenKruise's kruise-daemon`,
		},
		{
			name:    "kruise daemon of a second DaemonSet appears",
			pod:     makePod("kruise-2", "kruise-daemon-z", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", "ds-other")),
			wantErr: `pod kruise-2/kruise-daemon-z is a kruise-daemon of another DaemonSet (owner: DaemonSet kruise-2/kruise-daemon)`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ourName, ourPod())
			require.NoError(t, f.waitAlone())

			stopped := make(chan error, 1)
			go func() { stopped <- f.guard.StopOnConflict(f.ctx) }()
			// A new pod of our own DaemonSet and an unrelated pod: no reason to stop.
			f.create(makePod(ourNS, "kruise-daemon-new", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", ourDSUID)))
			f.create(makePod("default", "web"))
			f.create(tc.pod)

			var err error
			select {
			case err = <-stopped:
			case <-time.After(waitFor):
				t.Fatal("StopOnConflict did not return")
			}
			var ce *ConflictError
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Contains(t, err.Error(), "kruise-daemon stops so that only one daemon acts on this node")
			require.Error(t, f.guard.Check(nil))

			evs := gen.DrainEvents(f.recorder)
			require.Len(t, evs, 1, "%v", evs)
			assert.Contains(t, evs[0], "Warning ConflictingDaemon Pod "+tc.pod.Namespace+"/"+tc.pod.Name+" is ")
			assert.Equal(t, 1, podListCalls(f.client))
		})
	}
}

func TestGuardStopOnConflictEndsWithContext(t *testing.T) {
	f := newFixture(t, ourName, ourPod())
	require.NoError(t, f.waitAlone())
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	assert.NoError(t, f.guard.StopOnConflict(ctx))
}

func TestGuardNotReadyBeforeFirstLook(t *testing.T) {
	g := New(Config{Node: node, Namespace: ourNS, Name: ourName})
	err := g.Check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the pods of node "node-a" have not been checked for other node daemons yet`)
	assert.Equal(t, CheckName, g.Name())
	assert.ErrorContains(t, g.WaitAlone(context.Background()), "Watch was not called")
}

func TestGuardWaitAloneCancelled(t *testing.T) {
	f := newFixture(t, ourName, ourPod(), openKruisePod())
	f.eventuallyConflicts("kruise-system/kruise-daemon-ok1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, f.guard.WaitAlone(ctx), context.Canceled)
}
