package ephemeraljob

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newJob(mut ...func(*appsv1alpha1.EphemeralJob)) *appsv1alpha1.EphemeralJob {
	j := &appsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Name: "dbg", Namespace: "ns", UID: "job-uid", Generation: 1},
		Spec: appsv1alpha1.EphemeralJobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: appsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36",
					ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile},
			}}},
		},
	}
	for _, m := range mut {
		m(j)
	}
	return j
}

// newPod is pod name, created age minutes before t0.
func newPod(name string, age int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Duration(age) * time.Minute))},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// withContainer gives pod the debugger container, owned by owner, in state st (nil: no status).
func withContainer(p *corev1.Pod, owner string, st *corev1.ContainerState) *corev1.Pod {
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Env: []corev1.EnvVar{{Name: appsv1alpha1.EphemeralContainerEnvKey, Value: owner}}}})
	if st != nil {
		p.Status.EphemeralContainerStatuses = append(p.Status.EphemeralContainerStatuses, corev1.ContainerStatus{Name: "debugger", State: *st})
	}
	return p
}

var (
	running   = &corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting   = &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	succeeded = &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: metav1.NewTime(t0)}}
	failed    = &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(t0)}}
)

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// Targets: active, matching, oldest first (name breaks ties), not holding someone else's
// container of the same name, at most replicas.
func TestTargets(t *testing.T) {
	done := newPod("done", 9)
	done.Status.Phase = corev1.PodSucceeded
	deleting := newPod("deleting", 9)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	other := withContainer(newPod("other", 9), "another-job", running)
	pods := []*corev1.Pod{newPod("c", 1), newPod("b", 5), newPod("a", 5), done, deleting, other, withContainer(newPod("mine", 0), "job-uid", running)}
	assert.Equal(t, []string{"a", "b", "c", "mine"}, names(targetsOf(newJob(), pods)))
	assert.Equal(t, []string{"a", "b"}, names(targetsOf(newJob(func(j *appsv1alpha1.EphemeralJob) { j.Spec.Replicas = ptr.To[int32](2) }), pods)))
}

func TestStateOf(t *testing.T) {
	job := newJob()
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want podState
	}{
		"none":         {newPod("p", 0), stateNone},
		"not ours":     {withContainer(newPod("p", 0), "x", running), stateNone},
		"no status":    {withContainer(newPod("p", 0), "job-uid", nil), stateWaiting},
		"waiting":      {withContainer(newPod("p", 0), "job-uid", waiting), stateWaiting},
		"running":      {withContainer(newPod("p", 0), "job-uid", running), stateRunning},
		"succeeded":    {withContainer(newPod("p", 0), "job-uid", succeeded), stateSucceeded},
		"failed":       {withContainer(newPod("p", 0), "job-uid", failed), stateFailed},
		"cannot start": {withContainer(newPod("p", 0), "job-uid", &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RunContainerError"}}), stateFailed},
	} {
		assert.Equal(t, tc.want, stateOf(job, tc.pod), name)
	}
}

func cond(st appsv1alpha1.EphemeralJobStatus, t appsv1alpha1.EphemeralJobConditionType) *appsv1alpha1.EphemeralJobCondition {
	return findCondition(st.Conditions, t)
}

func TestPhases(t *testing.T) {
	for name, tc := range map[string]struct {
		job                                         *appsv1alpha1.EphemeralJob
		pods                                        []*corev1.Pod
		phase                                       appsv1alpha1.EphemeralJobPhase
		completed                                   bool
		match, succeeded, failed, running, waitingN int32
	}{
		"no pods":      {newJob(), nil, appsv1alpha1.EphemeralJobWaiting, false, 0, 0, 0, 0, 0},
		"not started":  {newJob(), []*corev1.Pod{newPod("a", 1)}, appsv1alpha1.EphemeralJobWaiting, false, 1, 0, 0, 0, 0},
		"waiting":      {newJob(), []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", waiting)}, appsv1alpha1.EphemeralJobWaiting, false, 1, 0, 0, 0, 1},
		"running":      {newJob(), []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", running), withContainer(newPod("b", 1), "job-uid", succeeded)}, appsv1alpha1.EphemeralJobRunning, false, 2, 1, 0, 1, 0},
		"between pods": {newJob(), []*corev1.Pod{withContainer(newPod("a", 2), "job-uid", succeeded), newPod("b", 1)}, appsv1alpha1.EphemeralJobRunning, false, 2, 1, 0, 0, 0},
		"succeeded":    {newJob(), []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", succeeded)}, appsv1alpha1.EphemeralJobSucceeded, true, 1, 1, 0, 0, 0},
		"failed":       {newJob(), []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", failed)}, appsv1alpha1.EphemeralJobFailed, true, 1, 0, 1, 0, 0},
		"mixed":        {newJob(), []*corev1.Pod{withContainer(newPod("a", 2), "job-uid", failed), withContainer(newPod("b", 1), "job-uid", succeeded)}, appsv1alpha1.EphemeralJobFailed, true, 2, 1, 1, 0, 0},
		"replicas cap": {newJob(func(j *appsv1alpha1.EphemeralJob) { j.Spec.Replicas = ptr.To[int32](1) }), []*corev1.Pod{withContainer(newPod("a", 2), "job-uid", succeeded), newPod("b", 1)}, appsv1alpha1.EphemeralJobSucceeded, true, 1, 1, 0, 0, 0},
		"paused":       {newJob(func(j *appsv1alpha1.EphemeralJob) { j.Spec.Paused = true }), []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", running)}, appsv1alpha1.EphemeralJobPause, false, 1, 0, 0, 1, 0},
		"empty template": {newJob(func(j *appsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers = nil }), []*corev1.Pod{newPod("a", 1)},
			appsv1alpha1.EphemeralJobError, false, 1, 0, 0, 0, 0},
	} {
		p := decide(input{job: tc.job, pods: tc.pods, now: t0})
		st := p.status
		assert.Equal(t, tc.phase, st.Phase, name)
		assert.Equal(t, tc.completed, st.CompletionTime != nil, name)
		assert.Equal(t, []int32{tc.match, tc.succeeded, tc.failed, tc.running, tc.waitingN}, []int32{st.Matches, st.Succeeded, st.Failed, st.Running, st.Waiting}, name)
		require.NotNil(t, cond(st, appsv1alpha1.EJobInitialized), name)
		assert.Equal(t, t0, st.StartTime.Time, name)
	}
	empty := decide(input{job: newJob(), now: t0}).status
	require.NotNil(t, cond(empty, appsv1alpha1.EJobMatchedEmpty))
	assert.Equal(t, corev1.ConditionTrue, cond(empty, appsv1alpha1.EJobMatchedEmpty).Status)
	assert.Equal(t, "JobSucceeded", cond(decide(input{job: newJob(), pods: []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", succeeded)}, now: t0}).status,
		appsv1alpha1.EJobSucceeded).Reason)
	errored := decide(input{job: newJob(func(j *appsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers = nil }), now: t0}).status
	assert.Equal(t, "Error", cond(errored, appsv1alpha1.EJobError).Reason)
}

// Parallelism counts the pods running or waiting (and those just given the containers); the
// next pods are the oldest without them.
func TestCandidates(t *testing.T) {
	pods := []*corev1.Pod{withContainer(newPod("a", 9), "job-uid", running), newPod("b", 8), newPod("c", 7), newPod("d", 6)}
	assert.Empty(t, decide(input{job: newJob(), pods: pods, now: t0}).candidates, "parallelism 1, one running")
	par3 := newJob(func(j *appsv1alpha1.EphemeralJob) { j.Spec.Parallelism = ptr.To[int32](3) })
	assert.Equal(t, []string{"b", "c"}, names(decide(input{job: par3, pods: pods, now: t0}).candidates))
	p := decide(input{job: par3, pods: pods, now: t0, added: map[types.UID]bool{"uid-b": true}})
	assert.Equal(t, []string{"c"}, names(p.candidates), "b was just given them")
	assert.EqualValues(t, 1, p.status.Waiting)
	p = decide(input{job: par3, pods: pods, now: t0, denied: map[types.UID]string{"uid-b": "create pods/exec"}})
	assert.Equal(t, []string{"c", "d"}, names(p.candidates), "a refused pod frees its slot")
	assert.EqualValues(t, 1, p.status.Failed)
	assert.Contains(t, cond(p.status, appsv1alpha1.EJobFailed).Message, "1 its requester may not reach ([b])")
	paused := newJob(func(j *appsv1alpha1.EphemeralJob) { j.Spec.Paused = true; j.Spec.Parallelism = ptr.To[int32](3) })
	assert.Empty(t, decide(input{job: paused, pods: pods, now: t0}).candidates)
	blocked := decide(input{job: par3, pods: pods, now: t0, blocked: errors.New("no requester"), blockedReason: "NoRequester"})
	assert.Empty(t, blocked.candidates)
	assert.Equal(t, appsv1alpha1.EphemeralJobError, blocked.status.Phase)
	assert.Equal(t, "NoRequester", cond(blocked.status, appsv1alpha1.EJobError).Reason)
}

// All refused: the job fails, each refused pod counted.
func TestAllDenied(t *testing.T) {
	pods := []*corev1.Pod{newPod("a", 2), newPod("b", 1)}
	p := decide(input{job: newJob(), pods: pods, now: t0, denied: map[types.UID]string{"uid-a": "x", "uid-b": "x"}})
	assert.Equal(t, appsv1alpha1.EphemeralJobFailed, p.status.Phase)
	assert.EqualValues(t, 2, p.status.Failed)
	assert.Empty(t, p.candidates)
}

// The deadline: the time left until it, then Failed with DeadlineExceeded.
func TestDeadline(t *testing.T) {
	job := newJob(func(j *appsv1alpha1.EphemeralJob) {
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
		j.Status.StartTime = &metav1.Time{Time: t0}
	})
	pods := []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", running)}
	p := decide(input{job: job, pods: pods, now: t0.Add(15 * time.Second)})
	assert.Equal(t, 45*time.Second, p.after)
	assert.Equal(t, appsv1alpha1.EphemeralJobRunning, p.status.Phase)
	p = decide(input{job: job, pods: pods, now: t0.Add(60 * time.Second)})
	assert.Equal(t, appsv1alpha1.EphemeralJobFailed, p.status.Phase)
	assert.Equal(t, "DeadlineExceeded", cond(p.status, appsv1alpha1.EJobFailed).Reason)
	assert.NotNil(t, p.status.CompletionTime)
	assert.Zero(t, p.after)
}

// Nothing changed, nothing to write: deciding again on the written status gives it back.
func TestIdle(t *testing.T) {
	pods := []*corev1.Pod{withContainer(newPod("a", 1), "job-uid", running), withContainer(newPod("b", 1), "job-uid", failed)}
	job := newJob()
	job.Status = decide(input{job: job, pods: pods, now: t0}).status
	again := decide(input{job: job, pods: pods, now: t0.Add(time.Hour)}).status
	assert.Equal(t, job.Status, again)
}

func TestFirstNames(t *testing.T) {
	var many []string
	for i := range 7 {
		many = append(many, fmt.Sprint(i))
	}
	assert.Equal(t, "[0 1 2 3 4] and 2 more", firstNames(many))
}
