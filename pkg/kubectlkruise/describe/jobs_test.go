package describe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/golden"
)

func broadcastJob(uid types.UID) *appsv1beta1.BroadcastJob {
	return &appsv1beta1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{Name: "clean-disk", Namespace: "ns", UID: uid, CreationTimestamp: ago(10 * time.Minute)},
		Spec: appsv1beta1.BroadcastJobSpec{
			Parallelism: ptr.To(intstr.FromString("50%")),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				NodeSelector:  map[string]string{"pool": "web"},
				Containers:    []corev1.Container{{Name: "clean", Image: "busybox:1.36"}},
			}},
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, ActiveDeadlineSeconds: ptr.To[int64](600), TTLSecondsAfterFinished: ptr.To[int32](60)},
			FailurePolicy:    appsv1beta1.FailurePolicy{Type: appsv1beta1.FailurePolicyTypeContinue, RestartLimit: 2},
		},
		Status: appsv1beta1.BroadcastJobStatus{
			StartTime: ptr.To(ago(10 * time.Minute)), Desired: 5, Active: 2, Succeeded: 1, Failed: 2, Phase: appsv1beta1.PhaseRunning,
		},
	}
}

// bcjPod is a pod of the job on node; pinned says it is not scheduled
// yet and only the node affinity names its node.
func bcjPod(uid types.UID, name, node string, pinned bool, phase corev1.PodPhase, statuses ...corev1.ContainerStatus) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: ago(9 * time.Minute),
			Labels:          map[string]string{appsv1beta1.BroadcastJobNameLabel: "clean-disk", appsv1beta1.BroadcastJobControllerUIDLabel: string(uid)},
			OwnerReferences: []metav1.OwnerReference{{Kind: "BroadcastJob", Name: "clean-disk", UID: uid, Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, NodeName: node},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: statuses},
	}
	if pinned {
		pod.Spec.NodeName = ""
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
		}}}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/5 nodes are available: insufficient cpu"}}
	}
	return pod
}

func TestDescribeBroadcastJob(t *testing.T) {
	const uid = types.UID("bcj-uid")
	exited := func(code int32, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "clean", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
	}
	crashing := corev1.ContainerStatus{Name: "clean", RestartCount: 3,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}
	job := broadcastJob(uid)
	job.Status.Conditions = []appsv1beta1.JobCondition{{Type: appsv1beta1.JobFailed, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Minute)}}
	kube := []runtime.Object{
		bcjPod(uid, "clean-disk-a", "node-a", false, corev1.PodSucceeded, exited(0, "Completed")),
		bcjPod(uid, "clean-disk-b", "node-b", false, corev1.PodFailed, exited(1, "Error")),
		// An OnFailure pod past the restart limit counts failed, though running.
		bcjPod(uid, "clean-disk-c", "node-c", false, corev1.PodRunning, crashing),
		bcjPod(uid, "clean-disk-d", "node-d", false, corev1.PodRunning, corev1.ContainerStatus{Name: "clean", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}),
		bcjPod(uid, "clean-disk-e", "node-e", true, corev1.PodPending),
		// Another job's pod, and a pod with the label but not controlled by the job.
		bcjPod("other-uid", "other-a", "node-a", false, corev1.PodRunning),
		func() runtime.Object {
			p := bcjPod(uid, "orphan", "node-a", false, corev1.PodRunning)
			p.OwnerReferences = nil
			return p
		}(),
		event("BroadcastJob", "clean-disk", uid, "Normal", "SuccessfulCreate", "created pod clean-disk-e on node-e", 1, 9*time.Minute, 9*time.Minute),
	}
	got, err := run(t, kube, []runtime.Object{job}, "bcj/clean-disk")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "broadcastjob", got)
}

// Over thousands of nodes the page stays short: the counts, the failed
// pods first, then the running ones, and how many were left out.
func TestDescribeBroadcastJobManyNodes(t *testing.T) {
	const uid = types.UID("bcj-uid")
	job := broadcastJob(uid)
	job.Status = appsv1beta1.BroadcastJobStatus{Desired: 3000, Active: 10, Succeeded: 2987, Failed: 3, Phase: appsv1beta1.PhaseRunning}
	var kube []runtime.Object
	for i := range 3000 {
		phase := corev1.PodSucceeded
		switch {
		case i%1000 == 7:
			phase = corev1.PodFailed
		case i%300 == 5:
			phase = corev1.PodRunning
		}
		kube = append(kube, bcjPod(uid, fmt.Sprintf("clean-disk-%04d", i), fmt.Sprintf("node-%04d", i), false, phase))
	}
	got, err := run(t, kube, []runtime.Object{job}, "broadcastjob", "clean-disk")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, "\n"); n > 60 {
		t.Errorf("the page of a job over 3000 nodes has %d lines, want at most 60", n)
	}
	golden.Assert(t, "broadcastjob-many", got)
}

func advancedCronJob(uid types.UID, template appsv1beta1.CronJobTemplate) *appsv1beta1.AdvancedCronJob {
	return &appsv1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: uid, CreationTimestamp: ago(72 * time.Hour)},
		Spec: appsv1beta1.AdvancedCronJobSpec{
			Schedule: "0 2 * * *", TimeZone: ptr.To("Europe/Berlin"), ConcurrencyPolicy: appsv1beta1.ForbidConcurrent,
			StartingDeadlineSeconds: ptr.To[int64](300), Paused: ptr.To(false),
			SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
			Template: template,
		},
		Status: appsv1beta1.AdvancedCronJobStatus{Type: appsv1beta1.JobTemplate, LastScheduleTime: ptr.To(ago(10 * time.Hour)),
			Active: []corev1.ObjectReference{{Kind: "Job", Name: "nightly-1772330400", Namespace: "ns"}}},
	}
}

func TestDescribeAdvancedCronJob(t *testing.T) {
	const uid = types.UID("acj-uid")
	acj := advancedCronJob(uid, appsv1beta1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "report", Image: "report:v3"}},
		}}},
	}})
	owned := []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "AdvancedCronJob", Name: "nightly", UID: uid, Controller: ptr.To(true)}}
	job := func(name string, age time.Duration, annotations map[string]string, refs []metav1.OwnerReference, conditions ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: ago(age), Annotations: annotations, OwnerReferences: refs},
			Status:     batchv1.JobStatus{Conditions: conditions},
		}
	}
	scheduled := func(at string) map[string]string {
		return map[string]string{appsv1beta1.ScheduledAtAnnotation: at}
	}
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	failed := batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}
	kube := []runtime.Object{
		job("nightly-1772157600", 58*time.Hour, scheduled("2026-02-27T02:00:00+01:00"), owned, failed),
		job("nightly-1772244000", 34*time.Hour, scheduled("2026-02-28T02:00:00+01:00"), owned, complete),
		job("nightly-1772330400", 10*time.Hour, scheduled("2026-03-01T02:00:00+01:00"), owned),
		job("nightly-by-hand", 5*time.Minute, map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}, owned),
		// Not the AdvancedCronJob's: no owner, and another owner of the same name.
		job("unrelated", time.Minute, nil, nil),
		job("nightly-old", time.Minute, nil, []metav1.OwnerReference{{Kind: "AdvancedCronJob", Name: "nightly", UID: "old-uid", Controller: ptr.To(true)}}),
		event("AdvancedCronJob", "nightly", uid, "Normal", "SuccessfulCreate", "created job nightly-1772330400", 1, 10*time.Hour, 10*time.Hour),
	}
	got, err := run(t, kube, []runtime.Object{acj}, "acj/nightly")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "advancedcronjob", got)
}

// A BroadcastJob template: its children are BroadcastJobs, their state
// read from their conditions and phase.
func TestDescribeAdvancedCronJobBroadcastTemplate(t *testing.T) {
	const uid = types.UID("acj-uid")
	acj := advancedCronJob(uid, appsv1beta1.CronJobTemplate{BroadcastJobTemplate: &appsv1beta1.BroadcastJobTemplateSpec{
		Spec: appsv1beta1.BroadcastJobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "clean", Image: "busybox:1.36"}}}}},
	}})
	acj.Spec.ConcurrencyPolicy, acj.Spec.TimeZone, acj.Spec.SuccessfulJobsHistoryLimit = "", nil, nil
	acj.Status = appsv1beta1.AdvancedCronJobStatus{Type: appsv1beta1.BroadcastJobTemplate}
	owned := []metav1.OwnerReference{{Kind: "AdvancedCronJob", Name: "nightly", UID: uid, Controller: ptr.To(true)}}
	bcj := func(name string, age time.Duration, st appsv1beta1.BroadcastJobStatus) *appsv1beta1.BroadcastJob {
		return &appsv1beta1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: ago(age), OwnerReferences: owned,
			Annotations: map[string]string{appsv1beta1.ScheduledAtAnnotation: "2026-03-01T02:00:00Z"}}, Status: st}
	}
	kruise := []runtime.Object{acj,
		bcj("nightly-1", 2*time.Hour, appsv1beta1.BroadcastJobStatus{Phase: appsv1beta1.PhaseCompleted, Conditions: []appsv1beta1.JobCondition{{Type: appsv1beta1.JobComplete, Status: corev1.ConditionTrue}}}),
		bcj("nightly-2", time.Hour, appsv1beta1.BroadcastJobStatus{Phase: appsv1beta1.PhasePaused}),
	}
	got, err := run(t, nil, kruise, "advancedcronjob.apps.kruise.io/nightly")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "advancedcronjob-broadcastjob", got)
}

func TestDescribeEphemeralJob(t *testing.T) {
	const uid = types.UID("ejob-uid")
	job := &appsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Name: "debug-web", Namespace: "ns", UID: uid, CreationTimestamp: ago(5 * time.Minute)},
		Spec: appsv1alpha1.EphemeralJobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Replicas: ptr.To[int32](4), Parallelism: ptr.To[int32](2),
			ActiveDeadlineSeconds: ptr.To[int64](300),
			Template: appsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36"}, TargetContainerName: "app",
			}}},
		},
		Status: appsv1alpha1.EphemeralJobStatus{Phase: appsv1alpha1.EphemeralJobRunning, StartTime: ptr.To(ago(5 * time.Minute)), Matches: 4, Running: 1, Succeeded: 1, Failed: 1, Waiting: 1,
			Conditions: []appsv1alpha1.EphemeralJobCondition{{Type: appsv1alpha1.EJobInitialized, Status: corev1.ConditionTrue, LastTransitionTime: ago(5 * time.Minute)}}},
	}
	mine := corev1.EnvVar{Name: appsv1alpha1.EphemeralContainerEnvKey, Value: string(uid)}
	pod := func(name string, state *corev1.ContainerState, env ...corev1.EnvVar) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
		if env != nil {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Env: env}}}
		}
		if state != nil {
			p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debugger", State: *state}}
		}
		return p
	}
	kube := []runtime.Object{
		pod("web-a", &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: ago(2 * time.Minute)}}, mine),
		pod("web-b", &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}, mine),
		pod("web-c", &corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Minute)}}, mine),
		pod("web-d", nil, mine),
		// A same-named container of another job, and a pod not reached yet.
		pod("web-e", &corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, corev1.EnvVar{Name: appsv1alpha1.EphemeralContainerEnvKey, Value: "other"}),
		pod("web-f", nil),
		event("EphemeralJob", "debug-web", uid, "Warning", "CreateFailed", "web-b: the node refused", 1, 3*time.Minute, 3*time.Minute),
	}
	unmatched := pod("db-a", nil, mine)
	unmatched.Labels = map[string]string{"app": "db"}
	kube = append(kube, unmatched)
	got, err := run(t, kube, []runtime.Object{job}, "ejob/debug-web")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "ephemeraljob", got)
}

// The next run is reckoned as the controller reckons it: in the schedule's
// zone (UTC when it names none), none while paused or unparsable.
func TestNextRun(t *testing.T) {
	p := newPage(now) // Sunday 1 March 2026, 12:00 UTC
	cases := []struct {
		spec appsv1beta1.AdvancedCronJobSpec
		want string
	}{
		{spec: appsv1beta1.AdvancedCronJobSpec{Schedule: "30 * * * *"}, want: "Sun, 01 Mar 2026 12:30:00 +0000 (in 30m)"},
		{spec: appsv1beta1.AdvancedCronJobSpec{Schedule: "0 9 * * *", TimeZone: ptr.To("Asia/Tokyo")}, want: "Mon, 02 Mar 2026 09:00:00 +0900 (in 12h)"},
		{spec: appsv1beta1.AdvancedCronJobSpec{Schedule: "CRON_TZ=America/New_York 0 9 * * *"}, want: "Sun, 01 Mar 2026 09:00:00 -0500 (in 120m)"},
		{spec: appsv1beta1.AdvancedCronJobSpec{Schedule: "0 9 * * *", Paused: ptr.To(true)}, want: "<none: paused>"},
		{spec: appsv1beta1.AdvancedCronJobSpec{Schedule: "every day"}, want: "<none: invalid schedule"},
	}
	for _, tc := range cases {
		if got := p.nextRun(&tc.spec); !strings.HasPrefix(got, tc.want) {
			t.Errorf("nextRun(%q) = %q, want %q", tc.spec.Schedule, got, tc.want)
		}
	}
}

// An ImageListPullJob template: its images and nodes, the Replace default,
// and its jobs finished by their completion time (failed unless every
// image's job succeeded).
func TestDescribeAdvancedCronJobImageListTemplate(t *testing.T) {
	const uid = types.UID("acj-uid")
	acj := advancedCronJob(uid, appsv1beta1.CronJobTemplate{ImageListPullJobTemplate: &appsv1beta1.ImageListPullJobTemplateSpec{
		Spec: appsv1beta1.ImageListPullJobSpec{Images: []string{"app:v2", "sidecar:v1"}, ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
			Selector: &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "web"}}},
		}},
	}})
	acj.Spec.ConcurrencyPolicy, acj.Spec.Paused = "", ptr.To(true)
	acj.Status = appsv1beta1.AdvancedCronJobStatus{Type: appsv1beta1.ImageListPullJobTemplate}
	owned := []metav1.OwnerReference{{Kind: "AdvancedCronJob", Name: "nightly", UID: uid, Controller: ptr.To(true)}}
	ilpj := func(name string, age time.Duration, st appsv1beta1.ImageListPullJobStatus) *appsv1beta1.ImageListPullJob {
		return &appsv1beta1.ImageListPullJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: ago(age), OwnerReferences: owned}, Status: st}
	}
	kruise := []runtime.Object{acj,
		ilpj("nightly-1", 3*time.Hour, appsv1beta1.ImageListPullJobStatus{Desired: 2, Succeeded: 2, CompletionTime: ptr.To(ago(2 * time.Hour))}),
		ilpj("nightly-2", 2*time.Hour, appsv1beta1.ImageListPullJobStatus{Desired: 2, Succeeded: 1, CompletionTime: ptr.To(ago(time.Hour))}),
		ilpj("nightly-3", time.Hour, appsv1beta1.ImageListPullJobStatus{Desired: 2, Active: 2}),
	}
	got, err := run(t, nil, kruise, "acj", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "advancedcronjob-imagelistpulljob", got)
}
