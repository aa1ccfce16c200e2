package imagelistpulljob

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/imagepulljob"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var now = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

type fixture struct {
	ctrl     *Controller
	kruise   *kruisefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	factory  kruiseinformers.SharedInformerFactory
}

func newList(images ...string) *v1beta1.ImageListPullJob {
	return gen.ImageListPullJob("list", gen.SetImageListPullJobNamespace("default"), gen.SetImageListPullJobUID("list-uid"),
		gen.SetImageListPullJobImages(images...), gen.SetImageListPullJobPullSecrets("s"), gen.SetImageListPullJobParallelism(intstrFrom(3)),
		gen.SetImageListPullJobActiveDeadlineSeconds(900), gen.SetImageListPullJobTTLSecondsAfterFinished(60))
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	f := &fixture{kruise: kruisefake.NewSimpleClientset(objs...), clock: clocktesting.NewFakeClock(now), recorder: record.NewFakeRecorder(50)}
	f.factory = kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	c, err := New(Config{
		Config:   ctrlbase.Config{Client: fake.NewClientset(), KruiseClient: f.kruise, Recorder: f.recorder, Clock: f.clock},
		ListJobs: f.factory.Apps().V1beta1().ImageListPullJobs(),
		Jobs:     f.factory.Apps().V1beta1().ImagePullJobs(),
	})
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	f.ctrl = c
	f.refresh(t)
	return f
}

// refresh copies the API server's objects into the caches.
func (f *fixture) refresh(t *testing.T) {
	c := context.Background()
	ll, err := f.kruise.AppsV1beta1().ImageListPullJobs("").List(c, metav1.ListOptions{})
	require.NoError(t, err)
	var ls []any
	for i := range ll.Items {
		ls = append(ls, &ll.Items[i])
	}
	require.NoError(t, f.factory.Apps().V1beta1().ImageListPullJobs().Informer().GetIndexer().Replace(ls, ""))
	jl, err := f.kruise.AppsV1beta1().ImagePullJobs("").List(c, metav1.ListOptions{})
	require.NoError(t, err)
	var js []any
	for i := range jl.Items {
		js = append(js, &jl.Items[i])
	}
	require.NoError(t, f.factory.Apps().V1beta1().ImagePullJobs().Informer().GetIndexer().Replace(js, ""))
}

func (f *fixture) sync(t *testing.T) time.Duration {
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, "default/list")
	require.NoError(t, err)
	f.refresh(t)
	return after
}

func (f *fixture) children(t *testing.T) map[string]v1beta1.ImagePullJob {
	jl, err := f.kruise.AppsV1beta1().ImagePullJobs("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]v1beta1.ImagePullJob{}
	for _, j := range jl.Items {
		out[j.Spec.Image] = j
	}
	return out
}

func (f *fixture) list(t *testing.T) *v1beta1.ImageListPullJob {
	l, err := f.kruise.AppsV1beta1().ImageListPullJobs("default").Get(context.Background(), "list", metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

// finishChild sets a child's status as the ImagePullJob controller would.
func (f *fixture) finishChild(t *testing.T, image string, desired, succeeded, failed int32, msg string) {
	j := f.children(t)[image]
	j.Status = v1beta1.ImagePullJobStatus{Desired: desired, Succeeded: succeeded, Failed: failed, Message: msg,
		CompletionTime: ptr.To(metav1.NewTime(f.clock.Now()))}
	_, err := f.kruise.AppsV1beta1().ImagePullJobs("default").UpdateStatus(context.Background(), &j, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
}

func TestChildName(t *testing.T) {
	a, b := ChildName("list", "nginx:1"), ChildName("list", "nginx:2")
	assert.NotEqual(t, a, b)
	assert.True(t, strings.HasPrefix(a, "list-"))
	assert.Len(t, ChildName(strings.Repeat("x", 300), "nginx"), 253)
}

func TestCreatesRemovesAndAggregates(t *testing.T) {
	f := newFixture(t, newList("nginx:1", "redis:7"))
	f.sync(t)
	kids := f.children(t)
	require.Len(t, kids, 2)
	k := kids["nginx:1"]
	assert.Equal(t, ChildName("list", "nginx:1"), k.Name)
	ref := metav1.GetControllerOf(&k)
	require.NotNil(t, ref)
	assert.Equal(t, "list", ref.Name)
	assert.Equal(t, []string{"s"}, k.Spec.PullSecrets)
	assert.Equal(t, int64(900), *k.Spec.CompletionPolicy.ActiveDeadlineSeconds)
	assert.Nil(t, k.Spec.CompletionPolicy.TTLSecondsAfterFinished, "the list job's ttl governs")
	st := f.list(t).Status
	assert.Equal(t, int32(2), st.Desired)
	assert.Equal(t, int32(2), st.Active)
	assert.NotNil(t, st.StartTime)

	// redis is dropped from the list: its job goes.
	l := f.list(t)
	l.Spec.Images = []string{"nginx:1"}
	_, err := f.kruise.AppsV1beta1().ImageListPullJobs("default").Update(context.Background(), l, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	f.sync(t)
	assert.Len(t, f.children(t), 1)
	assert.Equal(t, int32(1), f.list(t).Status.Desired)

	// Add one more, finish both, one with a failure.
	l = f.list(t)
	l.Spec.Images = []string{"nginx:1", "busybox:1"}
	_, err = f.kruise.AppsV1beta1().ImageListPullJobs("default").Update(context.Background(), l, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	f.sync(t)
	f.finishChild(t, "nginx:1", 2, 2, 0, "Completed: 2/2")
	f.sync(t)
	st = f.list(t).Status
	assert.Equal(t, int32(1), st.Completed)
	assert.Equal(t, int32(1), st.Active)
	assert.Nil(t, st.CompletionTime)

	f.finishChild(t, "busybox:1", 2, 1, 1, "Completed: 1/2 nodes succeeded, 1 failed")
	after := f.sync(t)
	st = f.list(t).Status
	require.NotNil(t, st.CompletionTime)
	assert.Equal(t, int32(2), st.Completed)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, int32(0), st.Active)
	require.Len(t, st.FailedImageStatuses, 1)
	assert.Equal(t, v1beta1.FailedImageStatus{ImagePullJob: ChildName("list", "busybox:1"), Name: "busybox:1", Message: "Completed: 1/2 nodes succeeded, 1 failed"}, *st.FailedImageStatuses[0])
	assert.Equal(t, 60*time.Second, after, "ttl requeue")

	f.clock.Step(time.Minute)
	f.sync(t)
	_, err = f.kruise.AppsV1beta1().ImageListPullJobs("default").Get(context.Background(), "list", metav1.GetOptions{})
	assert.Error(t, err, "deleted after its ttl")
}

func intstrFrom(v int32) intstr.IntOrString { return intstr.FromInt32(v) }

// A child that could not run at all (an invalid image: nothing desired,
// nothing failed) is a failure of the list job, not a success.
func TestChildThatCouldNotRunIsAFailure(t *testing.T) {
	f := newFixture(t, newList("nginx:1", "Not Valid"))
	f.sync(t)
	f.finishChild(t, "nginx:1", 1, 1, 0, "Completed: 1/1")
	f.finishChild(t, "Not Valid", 0, 0, 0, imagepulljob.FailedPrefix+"invalid image reference")
	f.sync(t)
	st := f.list(t).Status
	require.NotNil(t, st.CompletionTime)
	assert.Equal(t, int32(2), st.Completed)
	assert.Equal(t, int32(1), st.Succeeded)
	require.Len(t, st.FailedImageStatuses, 1)
	assert.Equal(t, "Not Valid", st.FailedImageStatuses[0].Name)
	assert.Contains(t, st.FailedImageStatuses[0].Message, "invalid image reference")
}

// A list job whose name cannot be a label value still gets its children.
func TestLongNameChildrenWithoutLabel(t *testing.T) {
	l := newList("nginx:1")
	l.Name = strings.Repeat("l", 70)
	f := newFixture(t, l)
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, "default/"+l.Name)
	require.NoError(t, err)
	kids := f.children(t)
	require.Len(t, kids, 1)
	assert.Empty(t, kids["nginx:1"].Labels)
}

// A child the API server refuses is reported on the list job, not retried in silence.
func TestRefusedChildIsReported(t *testing.T) {
	f := newFixture(t, newList("nginx:1"))
	f.kruise.PrependReactor("create", "imagepulljobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(v1beta1.SchemeGroupVersion.WithKind("ImagePullJob").GroupKind(), "x",
			field.ErrorList{field.Invalid(field.NewPath("spec", "image"), "", "bad")})
	})
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, "default/list")
	require.Error(t, err, "retried with backoff")
	select {
	case ev := <-f.recorder.Events:
		assert.Contains(t, ev, "Warning "+ReasonCreateFailed+" Cannot create the ImagePullJob for nginx:1")
	default:
		t.Fatal("no Event for the refused child")
	}
}

// The list job's own status write queues its next sync at once, often
// before the ImagePullJob cache shows the child the first sync created.
// That child is this list job's, not a name taken by someone else.
func TestOwnChildNotYetCachedIsNotAFailure(t *testing.T) {
	f := newFixture(t, newList("nginx:1"))
	_, ctx := ktesting.NewTestContext(t)
	_, err := f.ctrl.sync(ctx, "default/list")
	require.NoError(t, err)
	require.Len(t, f.children(t), 1)
	assert.Equal(t, []string{"Normal " + ReasonCreated + " Created ImagePullJob " + ChildName("list", "nginx:1") + " for nginx:1"}, gen.DrainEvents(f.recorder))

	// Only the list job's status write reached the caches.
	l := f.list(t)
	require.NoError(t, f.factory.Apps().V1beta1().ImageListPullJobs().Informer().GetIndexer().Update(l))
	_, err = f.ctrl.sync(ctx, "default/list")
	require.NoError(t, err)
	assert.Empty(t, gen.DrainEvents(f.recorder), "no CreateFailed for our own child")
	assert.Len(t, f.children(t), 1)
	st := f.list(t).Status
	assert.Equal(t, int32(1), st.Desired)
	assert.Equal(t, int32(1), st.Active)
}

// An ImagePullJob of the child's name that another owner controls (or
// that pulls another image) is reported: the list job cannot use it.
func TestForeignObjectOfChildNameIsReported(t *testing.T) {
	for name, mutate := range map[string]func(*v1beta1.ImagePullJob){
		"no owner":      func(j *v1beta1.ImagePullJob) { j.OwnerReferences = nil },
		"another list":  func(j *v1beta1.ImagePullJob) { j.OwnerReferences[0].UID = "other-uid" },
		"another image": func(j *v1beta1.ImagePullJob) { j.Spec.Image = "nginx:2" },
	} {
		t.Run(name, func(t *testing.T) {
			list := newList("nginx:1")
			foreign, _ := newChild(list, "nginx:1")
			mutate(foreign)
			f := newFixture(t, list)
			_, err := f.kruise.AppsV1beta1().ImagePullJobs("default").Create(context.Background(), foreign, metav1.CreateOptions{})
			require.NoError(t, err)
			_, ctx := ktesting.NewTestContext(t)
			_, err = f.ctrl.sync(ctx, "default/list") // the cache does not show it
			require.Error(t, err)
			ev := gen.DrainEvents(f.recorder)
			require.Len(t, ev, 1)
			assert.Contains(t, ev[0], "Warning "+ReasonCreateFailed+" Cannot create the ImagePullJob for nginx:1: ImagePullJob "+ChildName("list", "nginx:1")+" exists and is not this list job's")
		})
	}
}

// The list job says why its images failed: each failing child's message
// (which names its first failed node's reason), bounded, and the first one
// in the completion Event.
func TestChildFailureReasonsSurface(t *testing.T) {
	f := newFixture(t, newList("nginx:1", "redis:7"))
	f.sync(t)
	gen.DrainEvents(f.recorder)
	const why = "Completed: 0/1 nodes succeeded, 1 failed, 0 pulling (n1: failed to pull nginx:1 after 4 attempts: NotFound: manifest unknown)"
	f.finishChild(t, "nginx:1", 1, 0, 1, why)
	long := "Completed: 0/1 nodes succeeded, 1 failed, 0 pulling (n1: " + strings.Repeat("x", 2000) + ")"
	f.finishChild(t, "redis:7", 1, 0, 1, long)
	f.sync(t)
	st := f.list(t).Status
	require.Len(t, st.FailedImageStatuses, 2)
	assert.Equal(t, why, st.FailedImageStatuses[0].Message)
	assert.Len(t, st.FailedImageStatuses[1].Message, maxFailedImageMessage)
	assert.True(t, strings.HasSuffix(st.FailedImageStatuses[1].Message, "..."))
	assert.Equal(t, []string{"Warning " + ReasonFailed + " Completed: 0/2 images pulled on every node, 2 failed somewhere (nginx:1: " + why + ")"},
		gen.DrainEvents(f.recorder))
}

// reportChild sets a running child's counts as the ImagePullJob controller
// would (started, no completion time).
func (f *fixture) reportChild(t *testing.T, image string, desired, succeeded, failed, active int32) {
	j := f.children(t)[image]
	j.Status = v1beta1.ImagePullJobStatus{Desired: desired, Succeeded: succeeded, Failed: failed, Active: active,
		StartTime: ptr.To(metav1.NewTime(now)), Message: "x"}
	_, err := f.kruise.AppsV1beta1().ImagePullJobs("default").UpdateStatus(context.Background(), &j, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
}

// With completionPolicy Never the ImagePullJobs never complete: an image
// counts as completed once every node has reported, failures included (as
// OpenKruise counts it), and the list job itself still never completes.
func TestNeverImageCompletedOnceEveryNodeReported(t *testing.T) {
	l := newList("nginx:1", "redis:7", "busybox:1", "none:1")
	l.Spec.CompletionPolicy = v1beta1.CompletionPolicy{Type: v1beta1.Never}
	f := newFixture(t, l)
	f.sync(t)
	require.Len(t, f.children(t), 4)
	f.reportChild(t, "nginx:1", 2, 2, 0, 0)   // every node succeeded
	f.reportChild(t, "redis:7", 2, 1, 1, 0)   // every node reported, one failure
	f.reportChild(t, "busybox:1", 2, 1, 0, 1) // one node still pulling
	f.reportChild(t, "none:1", 0, 0, 0, 0)    // no node selected: nothing to wait for
	f.sync(t)
	st := f.list(t).Status
	assert.Equal(t, int32(4), st.Desired)
	assert.Equal(t, int32(3), st.Completed)
	assert.Equal(t, int32(2), st.Succeeded)
	assert.Equal(t, int32(1), st.Active)
	require.Len(t, st.FailedImageStatuses, 1)
	assert.Equal(t, "redis:7", st.FailedImageStatuses[0].Name)
	assert.Nil(t, st.CompletionTime, "a Never list job never completes")

	// The last node reports a failure: every image is completed.
	f.reportChild(t, "busybox:1", 2, 1, 1, 0)
	f.sync(t)
	st = f.list(t).Status
	assert.Equal(t, int32(4), st.Completed)
	assert.Equal(t, int32(0), st.Active)
	assert.Len(t, st.FailedImageStatuses, 2)
	assert.Nil(t, st.CompletionTime)

	// A node joins (or a re-pull starts): active again.
	f.reportChild(t, "nginx:1", 3, 2, 0, 1)
	f.sync(t)
	st = f.list(t).Status
	assert.Equal(t, int32(3), st.Completed)
	assert.Equal(t, int32(1), st.Active)
}

// An unstarted Never child (its first sync has not run) is not completed.
func TestReported(t *testing.T) {
	never := gen.ImagePullJob("j", gen.SetImagePullJobCompletionType(v1beta1.Never))
	assert.False(t, reported(never), "not started")
	never.Status.StartTime = ptr.To(metav1.NewTime(now))
	never.Status.Desired, never.Status.Failed = 1, 1
	assert.True(t, reported(never))
	always := gen.ImagePullJob("j")
	always.Status = never.Status
	assert.False(t, reported(always), "an Always job is completed by its completion time")
	always.Status.CompletionTime = ptr.To(metav1.NewTime(now))
	assert.True(t, reported(always))
}
