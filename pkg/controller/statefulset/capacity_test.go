package statefulset

import (
	"errors"
	"math"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/pkg/workload/ordinals"
)

func parallelPods(s *appsv1beta1.StatefulSet) {
	s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
}

// syncWithin runs one pass, failing the test if it has not returned by the deadline (before
// the fix a huge set listed every wanted ordinal first, and ran out of memory), and returns
// its error. The recorder is given room for a burst's Events (the fake one blocks when full).
func (f *fixture) syncWithin(deadline time.Duration) error {
	f.t.Helper()
	f.recorder = record.NewFakeRecorder(4 * workers.Burst)
	f.ctrl.recorder = f.recorder
	done := make(chan error, 1)
	go func() {
		_, err := f.ctrl.sync(testContext(f.t), testNS+"/"+f.set.Name)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(deadline):
		f.t.Fatalf("sync did not return within %s", deadline)
		return nil
	}
}

// createdPods are the pods the pass created, by name, with their revision.
func (f *fixture) createdPods() map[string]string {
	out := map[string]string{}
	for _, a := range f.kube.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			pod := c.GetObject().(*corev1.Pod)
			out[pod.Name] = pod.Labels[appsv1.ControllerRevisionHashLabelKey]
		}
	}
	return out
}

func podNames(ordinals ...int) []string {
	out := make([]string, 0, len(ordinals))
	for _, o := range ordinals {
		out = append(out, PodName("web", o))
	}
	return out
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// replicas 2147483647 under Parallel: one pass creates a burst of pods, the lowest ordinals.
func TestHugeParallelSetCreatesOneBurst(t *testing.T) {
	f := newFixture(t, statefulSet(math.MaxInt32, "app:1", parallelPods))
	require.NoError(t, f.syncWithin(time.Minute))
	created := f.createdPods()
	var want []int
	for o := 0; o < workers.Burst; o++ {
		want = append(want, o)
	}
	wantNames := podNames(want...)
	sort.Strings(wantNames)
	assert.Equal(t, wantNames, keys(created))
	assert.Len(t, f.ctrl.expect.Pending(testNS+"/web"), workers.Burst, "the burst is awaited")
	assert.Equal(t, int64(2), f.status().ObservedGeneration)
}

// The same with a start ordinal and reserved ranges, one of them two billion wide: the burst
// takes the wanted ordinals in order, skipping the reserved ones and those that have a pod, and
// a pod below the partition (counted in wanted ordinals) is created at the current revision.
func TestHugeSetWithReservedRangesAndPartition(t *testing.T) {
	mods := func(s *appsv1beta1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 5}
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("0-9"), intstr.FromInt32(12), intstr.FromString("100-2000000000")}
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](95)}
	}
	old := statefulSet(math.MaxInt32, "app:1", mods)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(math.MaxInt32, "app:2", mods)
	set.Status.CurrentRevision = oldRev.Name
	objs := []runtime.Object{oldRev}
	for _, o := range []int{10, 11, 13} {
		objs = append(objs, runningPod(t, set, oldRev, o))
	}
	f := newFixture(t, set, objs...)
	require.NoError(t, f.syncWithin(time.Minute))

	// Wanted: 10, 11, 13, …, 99 (89 ordinals at positions 0…88), then 2000000001 on; the
	// first 95 positions are under the partition.
	var want []int
	for o := 14; o <= 99; o++ {
		want = append(want, o)
	}
	for o := 2000000001; len(want) < workers.Burst; o++ {
		want = append(want, o)
	}
	wantNames := podNames(want...)
	sort.Strings(wantNames)
	created := f.createdPods()
	require.Equal(t, wantNames, keys(created))
	for name, rev := range created {
		o, _ := OrdinalOf("web", name)
		position := o - 11 // 10 and 11 are positions 0 and 1, 13 is 2, …, 99 is 88
		if o > 99 {
			position = 89 + o - 2000000001
		}
		wantRev := f.status().UpdateRevision
		if position < 95 {
			wantRev = oldRev.Name
		}
		assert.Equal(t, wantRev, rev, "pod %s at position %d", name, position)
	}
	assert.NotEqual(t, oldRev.Name, f.status().UpdateRevision)
}

// OrderedReady, huge: the lowest missing ordinal only, as for a small set.
func TestHugeOrderedSetCreatesOnePod(t *testing.T) {
	set := statefulSet(math.MaxInt32, "app:1", func(s *appsv1beta1.StatefulSet) {
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("1-2000000000")}
	})
	rev := revisionOf(t, set, 1)
	f := newFixture(t, set, rev, runningPod(t, set, rev, 0))
	require.NoError(t, f.syncWithin(time.Minute))
	assert.Equal(t, []string{"web-2000000001"}, keys(f.createdPods()))
}

// PlanScale on a huge set lists only the creations of the burst, skipping reserved ordinals and
// those that have pods, and counts the rest.
func TestPlanScaleHugeSetIsBounded(t *testing.T) {
	p := func(o int, s podState) *corev1.Pod { return testPod("web", o, s, "r1") }
	wanted := ordinals.NewWanted(0, math.MaxInt32, ordinals.Reserved{{From: 2, To: 4}})
	pods := []*corev1.Pod{p(0, healthy), p(1, pending), p(7, healthy), p(3, healthy)}
	got := PlanScale(ScaleInput{Set: "web", Wanted: wanted, Pods: pods, Parallel: true, Burst: 4, Now: t0})
	assert.Equal(t, []int{5, 6, 8, 9}, got.Create)
	assert.Equal(t, math.MaxInt32-3-4, got.Deferred, "the rest are left for later passes")
	assert.Equal(t, []string{"web-3"}, names(got.Delete), "a reserved ordinal's pod goes")

	got = PlanScale(ScaleInput{Set: "web", Wanted: wanted, Pods: pods, Parallel: true, ScaleMaxUnavailable: 3, Burst: 4, Now: t0})
	assert.Equal(t, []int{5, 6}, got.Create, "one unavailable pod, room for two more")
	assert.Equal(t, math.MaxInt32-3-2, got.Limited)
	assert.Zero(t, got.Deferred)

	got = PlanScale(ScaleInput{Set: "web", Wanted: wanted, Pods: pods[:1], Now: t0})
	assert.Equal(t, []int{1}, got.Create, "OrderedReady: the lowest missing ordinal")
}

// Parallel scale-in deletes at most a burst of pods per pass.
func TestParallelScaleInDeletesOneBurst(t *testing.T) {
	set := statefulSet(0, "app:1", parallelPods)
	rev := revisionOf(t, set, 1)
	objs := []runtime.Object{rev}
	for o := 0; o < workers.Burst+7; o++ {
		objs = append(objs, runningPod(t, set, rev, o))
	}
	f := newFixture(t, set, objs...)
	require.NoError(t, f.syncWithin(time.Minute))
	deleted := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			deleted++
		}
	}
	assert.Equal(t, workers.Burst, deleted)
}

// A refused creation (quota) ends the pass after one call, with an error (the queue backs off),
// the FailedCreatePod condition and a FailedCreate Event.
func TestRefusedCreationBacksOffAndIsReported(t *testing.T) {
	f := newFixture(t, statefulSet(5, "app:1", parallelPods))
	var calls atomic.Int32
	f.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), name,
			errors.New(`exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10`))
	})
	err := f.syncWithin(time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeded quota")
	assert.Equal(t, int32(1), calls.Load(), "slow start: one refused call, not one per pod")
	cond := condition(f.status(), appsv1beta1.FailedCreatePod)
	require.NotNil(t, cond)
	assert.Contains(t, cond.Message, "exceeded quota")
	assert.Contains(t, f.events(), ReasonFailedCreate)
	assert.Empty(t, f.ctrl.expect.Pending(testNS+"/web"), "a refused creation is not awaited")
}
