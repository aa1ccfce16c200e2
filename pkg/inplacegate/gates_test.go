package inplacegate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/expectations"
	"github.com/nodekruise/kruise/pkg/inplace"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var (
	t0   = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	kind = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "CloneSet"}
)

// owned is the controller reference of the CloneSet web.
func owned(k schema.GroupVersionKind) gen.PodModifier {
	return gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: k.GroupVersion().String(), Kind: k.Kind,
		Name: "web", UID: "web-uid", Controller: ptr.To(true)})
}

// restarting is a pod of the CloneSet web whose image update the kubelet is carrying out: it
// synced the new spec (observedGeneration), the old container still shows, the gate is False.
func restarting(t *testing.T, mods ...gen.PodModifier) *corev1.Pod {
	t.Helper()
	running := gen.Pod("web-a",
		gen.SetPodNamespace("ns"), gen.SetPodUID("pod-uid"), gen.SetPodResourceVersion("7"), owned(kind),
		gen.AddPodReadinessGate(pub.InPlaceUpdateReady),
		gen.SetPodContainers(gen.Container("app", gen.SetContainerImage("app:1"))),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "app:1", ImageID: "sha-1", ContainerID: "cri://app-1", Ready: true}),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	step, err := inplace.Start(running, &inplace.Spec{ContainerImages: map[string]string{"app": "app:2"}},
		inplace.Target{Revision: "web-r2"}, 0, t0)
	require.NoError(t, err)
	base := []gen.PodModifier{gen.SetPodGeneration(2, 2),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "app:1", ImageID: "sha-1", ContainerID: "cri://app-1"}),
		gen.SetPodCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: inplace.ReasonStartInPlaceUpdate}),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})}
	return gen.PodFrom(step.Pod, append(base, mods...)...)
}

// fixture is Gates on a fake clientset holding pod, whose pod cache (not started) holds it too.
type fixture struct {
	client   *fake.Clientset
	versions *expectations.ResourceVersions
	gates    *Gates
	cache    func(*corev1.Pod)
}

func newFixture(t *testing.T, pod *corev1.Pod) *fixture {
	t.Helper()
	client := fake.NewClientset(pod)
	clk := clocktesting.NewFakeClock(t0)
	pods := informers.NewSharedInformerFactory(client, 0).Core().V1().Pods()
	versions := expectations.NewResourceVersions(clk, time.Minute)
	g, err := New(Config{Name: "test-gates", Kind: kind, Pods: pods, Versions: versions, Clock: clk,
		Updater: inplace.NewUpdaterFor(inplace.NewPodClient(client), clk, wait.Backoff{Steps: 1})})
	require.NoError(t, err)
	t.Cleanup(g.queue.ShutDown)
	indexer := pods.Informer().GetIndexer()
	require.NoError(t, indexer.Add(pod))
	return &fixture{client: client, versions: versions, gates: g, cache: func(p *corev1.Pod) { require.NoError(t, indexer.Update(p)) }}
}

// writes lists the writes made, as "verb subresource".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+a.GetSubresource())
		}
	}
	return out
}

func (f *fixture) sync(t *testing.T) error {
	t.Helper()
	after, err := f.gates.sync(context.Background(), "ns/web-a")
	assert.Zero(t, after)
	return err
}

// The kubelet's sync of the update shows: the gate is released at once, and the write is awaited
// by the workload's pass (the shared resource versions).
func TestReleasesTheGateOnTheKubeletsSync(t *testing.T) {
	pod := restarting(t)
	f := newFixture(t, pod)
	// The fake keeps resource versions as given; the API server's write returns a newer one.
	f.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		_, obj, err := k8stesting.ObjectReaction(f.client.Tracker())(a)
		if p, ok := obj.(*corev1.Pod); ok {
			p.ResourceVersion = "8"
		}
		return true, obj, err
	})
	f.gates.offer(pod)
	assert.Equal(t, 1, f.gates.queue.Len())

	require.NoError(t, f.sync(t))
	assert.Equal(t, []string{"patch status"}, f.writes())
	written, err := f.client.CoreV1().Pods("ns").Get(context.Background(), "web-a", metav1.GetOptions{})
	require.NoError(t, err)
	c := inplace.Condition(written)
	assert.Equal(t, corev1.ConditionTrue, c.Status)
	assert.Equal(t, pub.InPlaceUpdateRestartingReason, c.Reason)
	ok, _ := f.versions.Satisfied(context.Background(), pod)
	assert.False(t, ok, "the pass waits until the cache shows the release")
}

// What is not a gate transition of this kind's pods is left to the workload's pass.
func TestLeavesOtherPodsAndStepsToThePass(t *testing.T) {
	other := schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "StatefulSet"}
	cases := map[string]*corev1.Pod{
		"another kind's pod":             restarting(t, owned(other)),
		"kubelet has not synced":         restarting(t, gen.SetPodGeneration(2, 1)),
		"no readiness gate":              gen.PodFrom(restarting(t), func(p *corev1.Pod) { p.Spec.ReadinessGates = nil }),
		"being deleted":                  restarting(t, gen.SetPodDeletionTimestamp(t0)),
		"update done: the pass marks it": restarting(t, gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", Image: "app:2", ImageID: "sha-2", ContainerID: "cri://app-2", Ready: true})),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, pod)
			f.gates.offer(pod)
			assert.Zero(t, f.gates.queue.Len())
			require.NoError(t, f.sync(t))
			assert.Empty(t, f.writes())
		})
	}
}

// A pod whose last write by the workload is not in the cache yet waits for it: its event offers
// the pod again.
func TestWaitsForTheControllersLastWrite(t *testing.T) {
	pod := restarting(t)
	f := newFixture(t, pod)
	f.versions.Expect(gen.PodFrom(pod, gen.SetPodResourceVersion("9")))
	require.NoError(t, f.sync(t))
	assert.Empty(t, f.writes())

	f.cache(gen.PodFrom(pod, gen.SetPodResourceVersion("9")))
	require.NoError(t, f.sync(t))
	assert.Equal(t, []string{"patch status"}, f.writes())
}

// A write that conflicts or finds the pod gone is dropped (the change's event offers the pod
// again); any other failure is retried by the queue.
func TestWriteFailures(t *testing.T) {
	cases := map[string]struct {
		err     error
		wantErr bool
	}{
		"conflict":  {err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-a", errors.New("changed"))},
		"not found": {err: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-a")},
		"refused":   {err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-a", errors.New("no")), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, restarting(t))
			f.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			err := f.sync(t)
			if tc.wantErr {
				assert.ErrorContains(t, err, "releasing the readiness gate of pod ns/web-a")
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// A pod gone from the cache is nothing to do.
func TestPodGone(t *testing.T) {
	f := newFixture(t, restarting(t))
	_, err := f.gates.sync(context.Background(), "ns/gone")
	require.NoError(t, err)
	assert.Empty(t, f.writes())
}
