package ephemeraljob

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
)

type fixture struct {
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	pods     informers.SharedInformerFactory
	jobs     kruiseinformers.SharedInformerFactory
	// patched are the pods given containers, with the patch's body.
	patched map[string]string
	// mayExec are the pods the requester may reach ("*": all).
	mayExec map[string]bool
	sars    int
}

func withRequester(j *appsv1alpha1.EphemeralJob) {
	j.Annotations = map[string]string{ejobaccess.RequesterAnnotation: ejobaccess.Requester{Username: "alice", Groups: []string{"dev"}}.Encode()}
	j.Finalizers = []string{Finalizer}
}

func newFixture(t *testing.T, job *appsv1alpha1.EphemeralJob, pods ...*corev1.Pod) *fixture {
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	f := &fixture{kube: fake.NewClientset(objs...), kruise: kruisefake.NewSimpleClientset(job), clock: clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(50), patched: map[string]string{}, mayExec: map[string]bool{"*": true}}
	f.kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.sars++
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "alice" && ra.Namespace == "ns" && (f.mayExec["*"] || f.mayExec[ra.Name])
		return true, sar, nil
	})
	f.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		require.Equal(t, "ephemeralcontainers", pa.GetSubresource())
		f.patched[pa.GetName()] = string(pa.GetPatch())
		return true, &corev1.Pod{}, nil
	})
	f.pods = informers.NewSharedInformerFactory(f.kube, 0)
	f.jobs = kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	c, err := New(Config{
		Config: ctrlbase.Config{Client: f.kube, KruiseClient: f.kruise, Recorder: f.recorder, Clock: f.clock},
		Jobs:   f.jobs.Apps().V1alpha1().EphemeralJobs(),
		Pods:   f.pods.Core().V1().Pods(),
	})
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	f.ctrl = c
	for _, p := range pods {
		require.NoError(t, f.pods.Core().V1().Pods().Informer().GetIndexer().Add(p))
	}
	f.refreshJob(t)
	return f
}

func (f *fixture) refreshJob(t *testing.T) {
	l, err := f.kruise.AppsV1alpha1().EphemeralJobs("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var objs []any
	for i := range l.Items {
		objs = append(objs, &l.Items[i])
	}
	require.NoError(t, f.jobs.Apps().V1alpha1().EphemeralJobs().Informer().GetIndexer().Replace(objs, ""))
}

func (f *fixture) job(t *testing.T) *appsv1alpha1.EphemeralJob {
	j, err := f.kruise.AppsV1alpha1().EphemeralJobs("ns").Get(context.Background(), "dbg", metav1.GetOptions{})
	require.NoError(t, err)
	return j
}

func (f *fixture) sync(t *testing.T) time.Duration {
	after, err := f.ctrl.sync(context.Background(), "ns/dbg")
	require.NoError(t, err)
	f.refreshJob(t)
	return after
}

func (f *fixture) events() string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// The containers go to the oldest pod, marked with the job's uid, through the subresource,
// after the requester is found to reach it; the pod then counts as waiting.
func TestSyncAddsContainers(t *testing.T) {
	f := newFixture(t, newJob(withRequester), newPod("a", 2), newPod("b", 1))
	f.sync(t)
	require.Len(t, f.patched, 1)
	var body struct {
		Metadata struct{ UID string }
		Spec     struct{ EphemeralContainers []corev1.EphemeralContainer }
	}
	require.NoError(t, json.Unmarshal([]byte(f.patched["a"]), &body))
	assert.Equal(t, "uid-a", body.Metadata.UID, "the pod judged, not a new one of its name")
	require.Len(t, body.Spec.EphemeralContainers, 1)
	assert.Equal(t, []corev1.EnvVar{{Name: appsv1alpha1.EphemeralContainerEnvKey, Value: "job-uid"}}, body.Spec.EphemeralContainers[0].Env)
	assert.Equal(t, 2, f.sars, "pods/exec and pods/ephemeralcontainers on pod a")
	st := f.job(t).Status
	assert.Equal(t, appsv1alpha1.EphemeralJobWaiting, st.Phase)
	assert.EqualValues(t, 2, st.Matches)
	assert.EqualValues(t, 1, st.Waiting)
	assert.Contains(t, f.events(), "AddedEphemeralContainers")

	// Again before the cache shows them: nothing more (parallelism 1), nothing written.
	rv := f.job(t).ResourceVersion
	f.sync(t)
	assert.Len(t, f.patched, 1)
	assert.Equal(t, rv, f.job(t).ResourceVersion, "idle")
}

// A pod the requester may not reach (rights by resourceNames) gets nothing and counts as
// failed; the next pod takes its slot.
func TestSyncSkipsPodsTheRequesterMayNotReach(t *testing.T) {
	f := newFixture(t, newJob(withRequester, func(j *appsv1alpha1.EphemeralJob) { j.Spec.Parallelism = ptr.To[int32](2) }),
		newPod("a", 3), newPod("b", 2), newPod("c", 1))
	f.mayExec = map[string]bool{"b": true, "c": true}
	f.sync(t)
	assert.Contains(t, f.patched, "b")
	assert.Contains(t, f.patched, "c")
	assert.NotContains(t, f.patched, "a")
	st := f.job(t).Status
	assert.EqualValues(t, 1, st.Failed)
	assert.EqualValues(t, 2, st.Waiting)
	assert.Contains(t, findCondition(st.Conditions, appsv1alpha1.EJobFailed).Message, "may not reach ([a])")
	assert.Contains(t, f.events(), `User "alice" may not reach pod a`)

}

// A refusal is remembered for the job's generation: the pod is not asked about again, and its
// slot goes to the next pod; a changed spec (a new generation, maybe a new requester) asks again.
func TestSyncRemembersRefusalsPerGeneration(t *testing.T) {
	f := newFixture(t, newJob(withRequester), newPod("a", 2), newPod("b", 1))
	f.mayExec = map[string]bool{"b": true}
	f.sync(t)
	assert.Equal(t, []string{"b"}, keys(f.patched))
	assert.Equal(t, 3, f.sars, "a refused at its first question, b allowed at both")

	// b's container finished: the job is done, a still refused without asking.
	done := withContainer(newPod("b", 1), "job-uid", succeeded)
	require.NoError(t, f.pods.Core().V1().Pods().Informer().GetIndexer().Update(done))
	f.sync(t)
	assert.Equal(t, 3, f.sars)
	st := f.job(t).Status
	assert.Equal(t, appsv1alpha1.EphemeralJobFailed, st.Phase, "b succeeded, a refused")

	// A new generation of an unfinished job asks again, and keeps what it added.
	f2 := newFixture(t, newJob(withRequester, func(j *appsv1alpha1.EphemeralJob) { j.Spec.Parallelism = ptr.To[int32](2) }),
		newPod("a", 2), newPod("b", 1))
	f2.mayExec = map[string]bool{"b": true}
	f2.sync(t)
	require.Contains(t, f2.patched, "b")
	n := f2.sars
	f2.sync(t)
	assert.Equal(t, n, f2.sars, "same generation: remembered")
	j := f2.job(t)
	j.Generation++
	_, err := f2.kruise.AppsV1alpha1().EphemeralJobs("ns").Update(context.Background(), j, metav1.UpdateOptions{})
	require.NoError(t, err)
	f2.refreshJob(t)
	f2.mayExec = map[string]bool{"a": true, "b": true}
	delete(f2.patched, "b")
	f2.sync(t)
	assert.Greater(t, f2.sars, n)
	assert.Contains(t, f2.patched, "a", "rights granted since, asked again for the new generation")
	assert.NotContains(t, f2.patched, "b", "b's containers, added but not yet in the cache, not added twice")
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Without the requester annotation (webhooks off, or a forged empty one), no pod is asked about
// or touched, and the job says why.
func TestSyncWithoutRequester(t *testing.T) {
	f := newFixture(t, newJob(func(j *appsv1alpha1.EphemeralJob) { j.Finalizers = []string{Finalizer} }), newPod("a", 1))
	f.sync(t)
	assert.Empty(t, f.patched)
	assert.Zero(t, f.sars)
	st := f.job(t).Status
	assert.Equal(t, appsv1alpha1.EphemeralJobError, st.Phase)
	assert.Equal(t, ReasonNoRequester, findCondition(st.Conditions, appsv1alpha1.EJobError).Reason)
	assert.Contains(t, f.events(), "Acting on no pod")
}

// With kruise's webhooks off nothing vouches for the annotation (a user may have written it):
// no pod is asked about or touched.
func TestSyncWithWebhooksOff(t *testing.T) {
	f := newFixture(t, newJob(withRequester), newPod("a", 1))
	f.ctrl.webhooksOff = true
	f.sync(t)
	assert.Empty(t, f.patched)
	assert.Zero(t, f.sars)
	st := f.job(t).Status
	assert.Equal(t, appsv1alpha1.EphemeralJobError, st.Phase)
	assert.Equal(t, ReasonWebhooksOff, findCondition(st.Conditions, appsv1alpha1.EJobError).Reason)
}

func TestSyncAddsFinalizer(t *testing.T) {
	job := newJob(withRequester)
	job.Finalizers = nil
	f := newFixture(t, job)
	f.sync(t)
	assert.Equal(t, []string{Finalizer}, f.job(t).Finalizers)
}

// A deleted job loses its finalizer (its containers stay: they cannot be removed).
func TestSyncDropsFinalizer(t *testing.T) {
	job := newJob(withRequester, func(j *appsv1alpha1.EphemeralJob) {
		j.DeletionTimestamp = &metav1.Time{Time: t0}
		j.Status.Succeeded = 1
	})
	f := newFixture(t, job)
	f.sync(t)
	assert.Empty(t, f.job(t).Finalizers)
	assert.Contains(t, f.events(), "cannot be removed")
}

// A finished job is deleted ttlSecondsAfterFinished after it finished (1800 s by default), and
// looked at again exactly then.
func TestSyncTTL(t *testing.T) {
	job := newJob(withRequester, func(j *appsv1alpha1.EphemeralJob) {
		j.Status.CompletionTime = &metav1.Time{Time: t0}
		j.Status.Phase = appsv1alpha1.EphemeralJobSucceeded
	})
	f := newFixture(t, job)
	f.clock.SetTime(t0.Add(1000 * time.Second))
	assert.Equal(t, 800*time.Second, f.sync(t))
	f.clock.SetTime(t0.Add(1800 * time.Second))
	f.sync(t)
	_, err := f.kruise.AppsV1alpha1().EphemeralJobs("ns").Get(context.Background(), "dbg", metav1.GetOptions{})
	assert.True(t, err != nil, "deleted")
}

// A finished pod turns the job to Succeeded; the sync asks to come back at the TTL.
func TestSyncCompletes(t *testing.T) {
	f := newFixture(t, newJob(withRequester, func(j *appsv1alpha1.EphemeralJob) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](5) }),
		withContainer(newPod("a", 1), "job-uid", succeeded))
	assert.Equal(t, 5*time.Second, f.sync(t))
	st := f.job(t).Status
	assert.Equal(t, appsv1alpha1.EphemeralJobSucceeded, st.Phase)
	require.NotNil(t, st.CompletionTime)
	assert.Empty(t, f.patched)
}

// A pod update that changes nothing the job reads queues nothing.
func TestPodChanged(t *testing.T) {
	a := newPod("a", 1)
	b := a.DeepCopy()
	b.Status.PodIP = "10.0.0.1"
	assert.False(t, podChanged(a, b))
	c := withContainer(a.DeepCopy(), "job-uid", running)
	assert.True(t, podChanged(a, c))
}
