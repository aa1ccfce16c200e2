package cloneset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/workers"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// within runs fn and fails the test if it has not returned by the deadline: what is under test
// is that it returns at all (before the fix, some of these never did, or ran out of memory).
func within(t *testing.T, deadline time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatalf("did not return within %s", deadline)
	}
}

// roomForEvents gives the fixture a recorder that holds a burst's Events (the fake recorder
// blocks when its buffer is full).
func roomForEvents(f *fixture) {
	f.recorder = record.NewFakeRecorder(4 * workers.Burst)
	f.ctrl.recorder = f.recorder
}

// syncErr runs one pass and returns its error, bounded in time.
func (f *fixture) syncErr() error {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	var err error
	within(f.t, time.Minute, func() { _, err = f.ctrl.sync(ctx, testNS+"/"+f.cs.Name) })
	return err
}

func (f *fixture) count(verb, resource string) int {
	n := 0
	for _, a := range f.actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == "" {
			n++
		}
	}
	return n
}

// replicas: 2000000 plans and creates one burst of pods in a pass, not two million (which held
// every pod object in memory before the first API call, and took the leader down).
func TestHugeReplicasCreateOneBurstPerPass(t *testing.T) {
	f := newFixture(t, cloneSet(2000000, "app:1"), nil)
	roomForEvents(f)
	if err := f.syncErr(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := f.count("create", "pods"); got != workers.Burst {
		t.Errorf("%d pods created in one pass, want a burst of %d", got, workers.Burst)
	}
	if got := len(f.ctrl.expect.Pending(testNS + "/web")); got != workers.Burst {
		t.Errorf("%d creations awaited, want %d", got, workers.Burst)
	}
	if st := f.status(); st.ObservedGeneration != 1 {
		t.Errorf("status not written: %+v", st)
	}

	// Until the cache shows them, the next pass creates nothing.
	f.kube.ClearActions()
	if err := f.syncErr(); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if got := f.count("create", "pods"); got != 0 {
		t.Errorf("%d pods created before the cache showed the burst", got)
	}
}

// Scaling in deletes at most a burst of pods per pass too.
func TestScaleInDeletesOneBurstPerPass(t *testing.T) {
	cs := cloneSet(0, "app:1")
	rev := revisionOf(t, cs, 1)
	var pods []*corev1.Pod
	for i := 0; i < workers.Burst+20; i++ {
		pods = append(pods, runningPod(t, cs, rev, fmt.Sprintf("p%04d", i)))
	}
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, pods...)
	roomForEvents(f)
	if err := f.syncErr(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := f.count("delete", "pods"); got != workers.Burst {
		t.Errorf("%d pods deleted in one pass, want a burst of %d", got, workers.Burst)
	}
}

// When the random draws find no free ID (the space is full, or nearly), InstanceIDs returns the
// IDs it found instead of drawing for ever.
func TestInstanceIDsEndWhenNoIDIsFree(t *testing.T) {
	withID := func(id string) gen.PodModifier {
		return gen.AddPodLabels(map[string]string{appsv1beta1.CloneSetInstanceID: id})
	}
	pods := []*corev1.Pod{gen.Pod("web-aaaaa", withID("aaaaa")), gen.Pod("web-bbbbb", withID("bbbbb"))}
	draws := 0
	cycle := func() string {
		draws++
		return []string{"aaaaa", "bbbbb", "ccccc"}[draws%3]
	}
	var got []string
	within(t, 30*time.Second, func() { got = InstanceIDs(3, pods, nil, false, cycle) })
	if len(got) != 1 || got[0] != "ccccc" {
		t.Errorf("IDs %v, want only [ccccc], the one free ID the draws return", got)
	}
	if draws > drawsPerID*3+extraDraws {
		t.Errorf("%d draws for 3 IDs, want at most %d", draws, drawsPerID*3+extraDraws)
	}

	within(t, 30*time.Second, func() { got = InstanceIDs(2, pods, nil, false, func() string { return "aaaaa" }) })
	if len(got) != 0 {
		t.Errorf("IDs %v, want none: every draw is taken", got)
	}
}

// A pass that finds fewer free IDs than pods to create says so: an error (the queue backs off),
// the FailedScale condition and a FailedCreate Event.
func TestNoFreeInstanceIDIsReported(t *testing.T) {
	cs := cloneSet(2, "app:1")
	rev := revisionOf(t, cs, 1)
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, runningPod(t, cs, rev, "aaaaa"))
	f.ctrl.randomID = func() string { return "aaaaa" }
	err := f.syncErr()
	if err == nil || !strings.Contains(err.Error(), "free instance ID") {
		t.Fatalf("sync error %v, want one about free instance IDs", err)
	}
	failed := f.condition(appsv1beta1.CloneSetConditionFailedScale)
	if failed == nil || !strings.Contains(failed.Message, "free instance ID") {
		t.Errorf("FailedScale condition %+v, want it to say no instance ID was free", failed)
	}
	if ev := drain(f.recorder); !strings.Contains(ev, ReasonFailedCreate) {
		t.Errorf("events %q, want %s", ev, ReasonFailedCreate)
	}
	for _, a := range f.actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			t.Errorf("created pod %s with no free ID", c.GetObject().(metav1.Object).GetName())
		}
	}
}

// drain returns the Events recorded so far, one a line.
func drain(r *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}
