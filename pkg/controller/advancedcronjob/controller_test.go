package advancedcronjob

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// t0 is a whole hour; the test cron jobs run hourly.
var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

type harness struct {
	c      *Controller
	client *fake.Clientset
	kruise *kruisefake.Clientset
	clock  *clocktesting.FakeClock
	rec    *record.FakeRecorder
	acj    *v1beta1.AdvancedCronJob
}

type acjMod func(*v1beta1.AdvancedCronJob)

func newACJ(mods ...acjMod) *v1beta1.AdvancedCronJob {
	a := &v1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: "ns", UID: "acj-uid", CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Minute))},
		Spec: v1beta1.AdvancedCronJobSpec{
			Schedule:                   "0 * * * *",
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			FailedJobsHistoryLimit:     ptr.To[int32](1),
			Template: v1beta1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				}}},
			}},
		},
	}
	for _, m := range mods {
		m(a)
	}
	return a
}

func lastScheduled(t time.Time) acjMod {
	return func(a *v1beta1.AdvancedCronJob) { a.Status.LastScheduleTime = &metav1.Time{Time: t} }
}

func policy(p v1beta1.ConcurrencyPolicy) acjMod {
	return func(a *v1beta1.AdvancedCronJob) { a.Spec.ConcurrencyPolicy = p }
}

// newHarness builds the controller over fake clients holding acj and jobs, its caches filled
// by hand, the clock at now. pullJobs says whether ImageListPullJobs are served (the gates).
func newHarness(t *testing.T, now time.Time, acj *v1beta1.AdvancedCronJob, pullJobs bool, jobs ...runtime.Object) *harness {
	t.Helper()
	var core, kruise []runtime.Object
	for _, j := range jobs {
		if _, ok := j.(*batchv1.Job); ok {
			core = append(core, j)
		} else {
			kruise = append(kruise, j)
		}
	}
	h := &harness{
		client: fake.NewClientset(core...),
		kruise: kruisefake.NewSimpleClientset(append(kruise, acj)...),
		clock:  clocktesting.NewFakeClock(now),
		rec:    record.NewFakeRecorder(100),
		acj:    acj,
	}
	f := informers.NewSharedInformerFactory(h.client, 0)
	kf := kruiseinformers.NewSharedInformerFactory(h.kruise, 0)
	cfg := Config{
		Config:        ctrlbase.Config{Client: h.client, KruiseClient: h.kruise, Recorder: h.rec, Clock: h.clock},
		CronJobs:      kf.Apps().V1beta1().AdvancedCronJobs(),
		Jobs:          f.Batch().V1().Jobs(),
		BroadcastJobs: kf.Apps().V1beta1().BroadcastJobs(),
	}
	if pullJobs {
		cfg.ImageListPullJobs = kf.Apps().V1beta1().ImageListPullJobs()
	}
	c, err := New(cfg)
	require.NoError(t, err)
	h.c = c
	require.NoError(t, cfg.CronJobs.Informer().GetIndexer().Add(acj))
	for _, j := range jobs {
		switch j.(type) {
		case *batchv1.Job:
			require.NoError(t, cfg.Jobs.Informer().GetIndexer().Add(j))
		case *v1beta1.BroadcastJob:
			require.NoError(t, cfg.BroadcastJobs.Informer().GetIndexer().Add(j))
		case *v1beta1.ImageListPullJob:
			require.NoError(t, cfg.ImageListPullJobs.Informer().GetIndexer().Add(j))
		}
	}
	return h
}

func (h *harness) sync(t *testing.T) time.Duration {
	t.Helper()
	after, err := h.c.sync(context.Background(), h.acj.Namespace+"/"+h.acj.Name)
	require.NoError(t, err)
	return after
}

// child is a Job of acj for the run at at, in state st, started at start (zero: not started).
func child(acj *v1beta1.AdvancedCronJob, at time.Time, st cronjobs.State, start time.Time) *batchv1.Job {
	obj, err := cronjobs.ChildFor(acj, at)
	if err != nil {
		panic(err)
	}
	j := obj.(*batchv1.Job)
	j.UID = types.UID("uid-" + j.Name)
	if !start.IsZero() {
		j.Status.StartTime = &metav1.Time{Time: start}
	}
	switch st {
	case cronjobs.Succeeded:
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	case cronjobs.Failed:
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	}
	return j
}

// created are the names of the objects of resource created through either client.
func (h *harness) created(resource string) []string {
	return h.verbs("create", resource)
}

func (h *harness) deleted(resource string) []string {
	return h.verbs("delete", resource)
}

func (h *harness) verbs(verb, resource string) []string {
	var out []string
	for _, a := range append(h.client.Actions(), h.kruise.Actions()...) {
		if a.GetVerb() != verb || a.GetResource().Resource != resource {
			continue
		}
		switch x := a.(type) {
		case k8stesting.CreateAction:
			out = append(out, x.GetObject().(metav1.Object).GetName())
		case k8stesting.DeleteAction:
			out = append(out, x.GetName())
		}
	}
	return out
}

func (h *harness) status(t *testing.T) v1beta1.AdvancedCronJobStatus {
	t.Helper()
	a, err := h.kruise.AppsV1beta1().AdvancedCronJobs(h.acj.Namespace).Get(context.Background(), h.acj.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return a.Status
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(events []string, reason string) bool {
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			return true
		}
	}
	return false
}

func runName(at time.Time) string { return fmt.Sprintf("hourly-%d", at.Unix()) }

func TestCreatesTheRunThatIsDue(t *testing.T) {
	h := newHarness(t, t0.Add(3*time.Second), newACJ(), true)
	after := h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.created("jobs"))
	job, err := h.client.BatchV1().Jobs("ns").Get(context.Background(), runName(t0), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2026-05-04T12:00:00Z", job.Annotations[v1beta1.ScheduledAtAnnotation])
	assert.Equal(t, "report", job.Labels["app"])
	require.Len(t, job.OwnerReferences, 1)
	assert.Equal(t, types.UID("acj-uid"), job.OwnerReferences[0].UID)

	st := h.status(t)
	assert.Equal(t, v1beta1.JobTemplate, st.Type)
	require.NotNil(t, st.LastScheduleTime)
	assert.True(t, st.LastScheduleTime.Time.Equal(t0))
	require.Len(t, st.Active, 1)
	assert.Equal(t, corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: "ns", Name: runName(t0), UID: job.UID}, st.Active[0])
	assert.Equal(t, time.Hour-3*time.Second+wakeSlack, after, "woken at the next run")
	assert.True(t, hasEvent(h.events(), ReasonCreated))
}

func TestWaitsForTheNextRun(t *testing.T) {
	h := newHarness(t, t0.Add(10*time.Minute), newACJ(lastScheduled(t0)), true)
	after := h.sync(t)
	assert.Empty(t, h.created("jobs"))
	assert.Equal(t, 50*time.Minute+wakeSlack, after)

	// The fake clock reaches the next run: the key's next sync creates it.
	h.clock.SetTime(t0.Add(time.Hour).Add(wakeSlack))
	h.acj = h.acj.DeepCopy()
	h.sync(t)
	assert.Equal(t, []string{runName(t0.Add(time.Hour))}, h.created("jobs"))
}

func TestAfterAnOutageOnlyTheLatestMissedRunStarts(t *testing.T) {
	acj := newACJ(lastScheduled(t0.Add(-5 * time.Hour)))
	acj.CreationTimestamp = metav1.NewTime(t0.Add(-24 * time.Hour))
	h := newHarness(t, t0.Add(20*time.Minute), acj, true)
	h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.created("jobs"), "one catch-up, no burst")
}

func TestStartingDeadline(t *testing.T) {
	acj := newACJ(lastScheduled(t0.Add(-time.Hour)), func(a *v1beta1.AdvancedCronJob) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](60) })
	h := newHarness(t, t0.Add(30*time.Second), acj, true)
	h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.created("jobs"), "30s late, within 60s")

	h = newHarness(t, t0.Add(2*time.Minute), acj, true)
	after := h.sync(t)
	assert.Empty(t, h.created("jobs"), "2 minutes late: skipped")
	assert.True(t, hasEvent(h.events(), ReasonMissed))
	assert.Equal(t, 58*time.Minute+wakeSlack, after)
}

func TestTooManyMissedStillStartsTheLatest(t *testing.T) {
	acj := newACJ(lastScheduled(t0.Add(-200*time.Hour)), func(a *v1beta1.AdvancedCronJob) { a.CreationTimestamp = metav1.NewTime(t0.Add(-300 * time.Hour)) })
	h := newHarness(t, t0.Add(time.Minute), acj, true)
	h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.created("jobs"), "the built-in's behaviour, not OpenKruise's stop")
	assert.True(t, hasEvent(h.events(), ReasonTooMany))
}

func TestConcurrencyPolicy(t *testing.T) {
	prev := t0.Add(-time.Hour)
	for _, tc := range []struct {
		policy  v1beta1.ConcurrencyPolicy
		created []string
		deleted []string
		active  []string
		event   string
	}{
		{"", []string{runName(t0)}, nil, []string{runName(prev), runName(t0)}, ReasonCreated},
		{v1beta1.AllowConcurrent, []string{runName(t0)}, nil, []string{runName(prev), runName(t0)}, ReasonCreated},
		{v1beta1.ForbidConcurrent, nil, nil, []string{runName(prev)}, ReasonAlreadyActive},
		{v1beta1.ReplaceConcurrent, []string{runName(t0)}, []string{runName(prev)}, []string{runName(t0)}, ReasonDeleted},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			acj := newACJ(lastScheduled(prev), policy(tc.policy))
			h := newHarness(t, t0.Add(time.Second), acj, true, child(acj, prev, cronjobs.Active, prev))
			h.sync(t)
			assert.Equal(t, tc.created, h.created("jobs"))
			assert.Equal(t, tc.deleted, h.deleted("jobs"))
			var active []string
			for _, r := range h.status(t).Active {
				active = append(active, r.Name)
			}
			assert.Equal(t, tc.active, active)
			assert.True(t, hasEvent(h.events(), tc.event))
		})
	}
}

func TestForbidStartsTheHeldRunOnceTheActiveOneEnds(t *testing.T) {
	prev := t0.Add(-time.Hour)
	acj := newACJ(lastScheduled(prev), policy(v1beta1.ForbidConcurrent))
	h := newHarness(t, t0.Add(10*time.Minute), acj, true, child(acj, prev, cronjobs.Succeeded, prev))
	h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.created("jobs"), "the previous run ended: the held run starts (no deadline)")
}

func TestPausedCreatesNothing(t *testing.T) {
	acj := newACJ(func(a *v1beta1.AdvancedCronJob) { a.Spec.Paused = ptr.To(true) })
	h := newHarness(t, t0.Add(time.Second), acj, true)
	after := h.sync(t)
	assert.Empty(t, h.created("jobs"))
	assert.Zero(t, after, "idle until resumed (an update of the object)")
	assert.Equal(t, v1beta1.JobTemplate, h.status(t).Type)
}

func TestHistoryLimits(t *testing.T) {
	acj := newACJ(lastScheduled(t0))
	var jobs []runtime.Object
	for i := 1; i <= 5; i++ { // succeeded runs 1..5 hours ago, started in order
		at := t0.Add(-time.Duration(i) * time.Hour)
		jobs = append(jobs, child(acj, at, cronjobs.Succeeded, at))
	}
	for i := 6; i <= 7; i++ {
		at := t0.Add(-time.Duration(i) * time.Hour)
		jobs = append(jobs, child(acj, at, cronjobs.Failed, at))
	}
	h := newHarness(t, t0.Add(time.Minute), acj, true, jobs...)
	h.sync(t)
	assert.ElementsMatch(t, []string{runName(t0.Add(-5 * time.Hour)), runName(t0.Add(-4 * time.Hour)), runName(t0.Add(-7 * time.Hour))}, h.deleted("jobs"),
		"the two oldest successes and the older failure")
	assert.Empty(t, h.created("jobs"))
}

// openkruise/kruise#862: with successfulJobsHistoryLimit 0 the finished run is deleted at once;
// lastScheduleTime must still say it ran, or the same run starts again.
func TestZeroHistoryDoesNotRunTheSameScheduleAgain(t *testing.T) {
	acj := newACJ(lastScheduled(t0.Add(-time.Hour)), func(a *v1beta1.AdvancedCronJob) { a.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0) })
	h := newHarness(t, t0.Add(time.Second), acj, true)
	h.sync(t)
	require.Equal(t, []string{runName(t0)}, h.created("jobs"))
	st := h.status(t)

	// The run finished and was deleted (history 0); the cache shows no job, the status the run.
	acj = acj.DeepCopy()
	acj.Status = st
	h = newHarness(t, t0.Add(5*time.Minute), acj, true, child(acj, t0, cronjobs.Succeeded, t0))
	h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.deleted("jobs"))
	acj.Status = h.status(t)
	h = newHarness(t, t0.Add(6*time.Minute), acj, true)
	h.sync(t)
	assert.Empty(t, h.created("jobs"), "the run of 12:00 is not created again")
	assert.True(t, h.status(t).LastScheduleTime.Time.Equal(t0), "lastScheduleTime does not go back")
}

func TestAlreadyCreatedRunIsAdopted(t *testing.T) {
	// Created by an earlier sync whose status write failed; the cache has not seen it.
	acj := newACJ()
	existing := child(acj, t0, cronjobs.Active, time.Time{})
	h := newHarness(t, t0.Add(time.Second), acj, true)
	_, err := h.client.BatchV1().Jobs("ns").Create(context.Background(), existing, metav1.CreateOptions{})
	require.NoError(t, err)
	h.sync(t)
	st := h.status(t)
	require.Len(t, st.Active, 1)
	assert.Equal(t, runName(t0), st.Active[0].Name)
	assert.True(t, st.LastScheduleTime.Time.Equal(t0))
	assert.False(t, hasEvent(h.events(), ReasonCreateFailed))
}

func TestNameTakenByAnotherObject(t *testing.T) {
	acj := newACJ()
	h := newHarness(t, t0.Add(time.Second), acj, true)
	_, err := h.client.BatchV1().Jobs("ns").Create(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: runName(t0), Namespace: "ns"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	h.sync(t)
	assert.True(t, hasEvent(h.events(), ReasonCreateFailed))
	assert.Nil(t, h.status(t).LastScheduleTime, "not recorded as run")
}

func TestTimeZone(t *testing.T) {
	acj := newACJ(func(a *v1beta1.AdvancedCronJob) {
		a.Spec.Schedule = "0 20 * * *" // 12:00 UTC
		a.Spec.TimeZone = ptr.To("Asia/Shanghai")
	})
	h := newHarness(t, t0.Add(time.Second), acj, true)
	h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.created("jobs"))
}

func TestInvalidScheduleIsReported(t *testing.T) {
	acj := newACJ(func(a *v1beta1.AdvancedCronJob) { a.Spec.Schedule = "every hour" })
	h := newHarness(t, t0.Add(time.Second), acj, true)
	assert.Zero(t, h.sync(t))
	assert.Empty(t, h.created("jobs"))
	assert.True(t, hasEvent(h.events(), ReasonInvalid))
}

func TestBroadcastJobTemplate(t *testing.T) {
	acj := newACJ(func(a *v1beta1.AdvancedCronJob) {
		a.Spec.Template = v1beta1.CronJobTemplate{BroadcastJobTemplate: &v1beta1.BroadcastJobTemplateSpec{}}
	})
	h := newHarness(t, t0.Add(time.Second), acj, true)
	h.sync(t)
	assert.Equal(t, []string{runName(t0)}, h.created("broadcastjobs"))
	st := h.status(t)
	assert.Equal(t, v1beta1.BroadcastJobTemplate, st.Type)
	require.Len(t, st.Active, 1)
	assert.Equal(t, "apps.kruise.io/v1beta1", st.Active[0].APIVersion)
}

func TestImageListPullJobTemplate(t *testing.T) {
	prev := t0.Add(-time.Hour)
	ilpj := func(a *v1beta1.AdvancedCronJob) {
		a.Spec.Template = v1beta1.CronJobTemplate{ImageListPullJobTemplate: &v1beta1.ImageListPullJobTemplateSpec{
			Spec: v1beta1.ImageListPullJobSpec{Images: []string{"busybox"}},
		}}
	}
	acj := newACJ(ilpj, lastScheduled(prev))
	running, err := cronjobs.ChildFor(acj, prev)
	require.NoError(t, err)
	running.SetUID("running")
	h := newHarness(t, t0.Add(time.Second), acj, true, running)
	h.sync(t)
	assert.Equal(t, []string{runName(prev)}, h.deleted("imagelistpulljobs"), "unset policy: Replace for pull jobs")
	assert.Equal(t, []string{runName(t0)}, h.created("imagelistpulljobs"))

	// The gates off: reported, nothing created.
	h = newHarness(t, t0.Add(time.Second), newACJ(ilpj), false)
	h.sync(t)
	assert.Empty(t, h.created("imagelistpulljobs"))
	assert.True(t, hasEvent(h.events(), ReasonPullJobsGateOff))
	assert.Equal(t, v1beta1.ImageListPullJobTemplate, h.status(t).Type)
}

func TestChildEventsQueueTheirCronJob(t *testing.T) {
	acj := newACJ()
	h := newHarness(t, t0, acj, true)
	j := child(acj, t0, cronjobs.Active, time.Time{})
	h.c.enqueueOwner(j)
	require.Equal(t, 1, h.c.queue.Len())
	key, _ := h.c.queue.Get()
	assert.Equal(t, "ns/hourly", key)
	h.c.queue.Done(key)

	other := j.DeepCopy()
	other.OwnerReferences[0].Kind = "CronJob"
	h.c.enqueueOwner(other)
	assert.Zero(t, h.c.queue.Len(), "not an AdvancedCronJob's")

	idx, err := indexByOwner(j)
	require.NoError(t, err)
	assert.Equal(t, []string{"acj-uid"}, idx)
}
