//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"os"
	sigsyaml "sigs.k8s.io/yaml"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// AdvancedCronJob on the local cluster, without waiting for the clock. Each cron job runs daily
// at the minute that has just begun (UTC), so its next run is a day away and no run comes
// mid-test; it is created paused, its status.lastScheduleTime is then set an hour back, as after
// a controller outage, and resuming it makes the controller start the run it missed (that
// minute) at once: the built-in CronJob's catch-up, which kruise keeps.

// cronRun is a cron job's schedule for the minute just begun and that minute.
func cronRun() (schedule string, at time.Time) {
	at = time.Now().UTC().Truncate(time.Minute)
	return fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour()), at
}

// acjRunName is the name of the job of the run at t (OpenKruise's: name and Unix seconds).
func acjRunName(acj string, at time.Time) string { return fmt.Sprintf("%s-%d", acj, at.Unix()) }

func cronJobOf(ns, name, schedule, image, script string) *appsv1beta1.AdvancedCronJob {
	job := framework.BusyboxJob(ns, "", image, script)
	return &appsv1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.AdvancedCronJobSpec{
			Schedule: schedule,
			TimeZone: ptr.To("UTC"),
			Paused:   ptr.To(true),
			Template: appsv1beta1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"report": "nightly"}, Annotations: map[string]string{"team": "e2e"}},
				Spec:       job.Spec,
			}},
		},
	}
}

// createPausedCronJob creates acj (paused), waits for the controller to have seen it
// (status.type) and sets its lastScheduleTime an hour back.
func createPausedCronJob(ctx context.Context, t *testing.T, kc versioned.Interface, acj *appsv1beta1.AdvancedCronJob) *appsv1beta1.AdvancedCronJob {
	t.Helper()
	acj.Spec.Paused = ptr.To(true)
	created, err := kc.AppsV1beta1().AdvancedCronJobs(acj.Namespace).Create(ctx, acj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating AdvancedCronJob: %v", err)
	}
	waitCronStatus(ctx, t, kc, created, "status.type set", func(a *appsv1beta1.AdvancedCronJob) bool { return a.Status.Type != "" })
	back := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := kc.AppsV1beta1().AdvancedCronJobs(acj.Namespace).Get(ctx, acj.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.LastScheduleTime = &back
		_, err = kc.AppsV1beta1().AdvancedCronJobs(acj.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting lastScheduleTime: %v", err)
	}
	return created
}

func resumeCronJob(ctx context.Context, t *testing.T, kc versioned.Interface, acj *appsv1beta1.AdvancedCronJob) {
	t.Helper()
	_, err := kc.AppsV1beta1().AdvancedCronJobs(acj.Namespace).Patch(ctx, acj.Name, types.MergePatchType,
		[]byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("resuming AdvancedCronJob: %v", err)
	}
}

func waitCronStatus(ctx context.Context, t *testing.T, kc versioned.Interface, acj *appsv1beta1.AdvancedCronJob, desc string, ok func(*appsv1beta1.AdvancedCronJob) bool) *appsv1beta1.AdvancedCronJob {
	t.Helper()
	var last *appsv1beta1.AdvancedCronJob
	framework.WaitFor(ctx, t, time.Minute, fmt.Sprintf("AdvancedCronJob %s/%s: %s", acj.Namespace, acj.Name, desc), func(ctx context.Context) (bool, string, error) {
		cur, err := kc.AppsV1beta1().AdvancedCronJobs(acj.Namespace).Get(ctx, acj.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		last = cur
		return ok(cur), fmt.Sprintf("status %+v", cur.Status), nil
	})
	return last
}

// waitJob waits for the Job to exist and returns it.
func waitJob(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	framework.WaitFor(ctx, t, time.Minute, "job "+ns+"/"+name, func(ctx context.Context) (bool, string, error) {
		j, err := f.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not created; jobs: " + jobNames(ctx, f, ns), nil
		}
		job = j
		return err == nil, "created", err
	})
	return job
}

// waitJobGone waits for the Job to be deleted or to be on its way (deletionTimestamp).
func waitJobGone(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) {
	t.Helper()
	framework.WaitFor(ctx, t, time.Minute, "job "+ns+"/"+name+" deleted", func(ctx context.Context) (bool, string, error) {
		j, err := f.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return j.DeletionTimestamp != nil, "still there", nil
	})
}

func jobNames(ctx context.Context, f *framework.Framework, ns string) string {
	list, err := f.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// ownedBy is a controller reference to acj.
func ownedBy(acj *appsv1beta1.AdvancedCronJob) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "AdvancedCronJob", Name: acj.Name, UID: acj.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

// A Job template: the missed run starts at once, named and annotated as OpenKruise does, owned
// by the cron job, with the template's labels and annotations; status says so.
func TestAdvancedCronJobRunsJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "acj-job")
	schedule, at := cronRun()
	acj := createPausedCronJob(ctx, t, kc, cronJobOf(ns, "report", schedule, f.Image("public/busybox:1.35"), "sleep 600"))
	resumeCronJob(ctx, t, kc, acj)

	name := acjRunName("report", at)
	job := waitJob(ctx, t, f, ns, name)
	if got := job.Annotations[appsv1beta1.ScheduledAtAnnotation]; got != at.Format(time.RFC3339) {
		t.Errorf("scheduled-at %q, want %q", got, at.Format(time.RFC3339))
	}
	if job.Labels["report"] != "nightly" || job.Annotations["team"] != "e2e" {
		t.Errorf("template metadata not copied: labels %v annotations %v", job.Labels, job.Annotations)
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.UID != acj.UID || ref.Kind != "AdvancedCronJob" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner references %+v, want a blocking controller reference to %s", job.OwnerReferences, acj.UID)
	}
	waitCronStatus(ctx, t, kc, acj, "type Job, the run active and last scheduled", func(a *appsv1beta1.AdvancedCronJob) bool {
		return a.Status.Type == appsv1beta1.JobTemplate && a.Status.LastScheduleTime != nil && a.Status.LastScheduleTime.Time.Equal(at) &&
			len(a.Status.Active) == 1 && a.Status.Active[0].Name == name && a.Status.Active[0].UID == job.UID
	})
	f.WaitObjectEvent(ctx, t, ns, "AdvancedCronJob", "report", "SuccessfulCreate", time.Minute, name)
}

// Concurrency policies against a run still active (a Job of the cron job's, made by hand).
func TestAdvancedCronJobConcurrency(t *testing.T) {
	t.Parallel()
	for _, policy := range []appsv1beta1.ConcurrencyPolicy{appsv1beta1.AllowConcurrent, appsv1beta1.ForbidConcurrent, appsv1beta1.ReplaceConcurrent} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			f := framework.New(t)
			kc := f.KruiseClient(t)
			ctx := framework.Context(t, 4*time.Minute)
			ns := f.NewNamespace(ctx, t, "acj-"+strings.ToLower(string(policy)))
			schedule, at := cronRun()
			spec := cronJobOf(ns, "sync", schedule, f.Image("public/busybox:1.35"), "sleep 600")
			spec.Spec.ConcurrencyPolicy = policy
			acj := createPausedCronJob(ctx, t, kc, spec)
			prev := framework.BusyboxJob(ns, "sync-by-hand", f.Image("public/busybox:1.35"), "sleep 600")
			prev.OwnerReferences = ownedBy(acj)
			if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, prev, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating the active run: %v", err)
			}
			waitCronStatus(ctx, t, kc, acj, "the hand-made run active", func(a *appsv1beta1.AdvancedCronJob) bool {
				return len(a.Status.Active) == 1 && a.Status.Active[0].Name == prev.Name
			})
			resumeCronJob(ctx, t, kc, acj)
			name := acjRunName("sync", at)
			switch policy {
			case appsv1beta1.AllowConcurrent:
				waitJob(ctx, t, f, ns, name)
				waitCronStatus(ctx, t, kc, acj, "both runs active", func(a *appsv1beta1.AdvancedCronJob) bool { return len(a.Status.Active) == 2 })
			case appsv1beta1.ForbidConcurrent:
				f.WaitObjectEvent(ctx, t, ns, "AdvancedCronJob", "sync", "JobAlreadyActive", time.Minute, prev.Name)
				if _, err := f.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("run %s created beside an active one under Forbid (err %v)", name, err)
				}
				// The active run goes: the held run starts (no startingDeadlineSeconds).
				if err := f.Client.BatchV1().Jobs(ns).Delete(ctx, prev.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
					t.Fatalf("deleting the active run: %v", err)
				}
				waitJob(ctx, t, f, ns, name)
			case appsv1beta1.ReplaceConcurrent:
				waitJob(ctx, t, f, ns, name)
				waitJobGone(ctx, t, f, ns, prev.Name)
				waitCronStatus(ctx, t, kc, acj, "only the new run active", func(a *appsv1beta1.AdvancedCronJob) bool {
					return len(a.Status.Active) == 1 && a.Status.Active[0].Name == name
				})
			}
		})
	}
}

// Paused: the missed run does not start.
func TestAdvancedCronJobPaused(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "acj-paused")
	schedule, _ := cronRun()
	createPausedCronJob(ctx, t, kc, cronJobOf(ns, "held", schedule, f.Image("public/busybox:1.35"), "true"))
	framework.Consistently(ctx, t, 5*time.Second, "no job of a paused AdvancedCronJob", func(ctx context.Context) (bool, string, error) {
		list, err := f.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, jobNames(ctx, f, ns), nil
	})
}

// History limits: of three finished runs with successfulJobsHistoryLimit 1, the newest stays.
func TestAdvancedCronJobHistoryLimit(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "acj-history")
	schedule, _ := cronRun()
	spec := cronJobOf(ns, "trim", schedule, f.Image("public/busybox:1.35"), "true")
	spec.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
	acj := createPausedCronJob(ctx, t, kc, spec)
	for i := 1; i <= 3; i++ {
		j := framework.BusyboxJob(ns, fmt.Sprintf("trim-run-%d", i), f.Image("public/busybox:1.35"), "true")
		j.OwnerReferences = ownedBy(acj)
		if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating run %d: %v", i, err)
		}
	}
	var survivor string
	framework.WaitFor(ctx, t, 3*time.Minute, "one finished run left", func(ctx context.Context) (bool, string, error) {
		list, err := f.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var left []batchv1.Job
		for _, j := range list.Items {
			if j.DeletionTimestamp == nil {
				left = append(left, j)
			}
		}
		if len(left) != 1 {
			return false, jobNames(ctx, f, ns), nil
		}
		survivor = left[0].Name
		complete, _ := framework.JobOutcome(&left[0])
		return complete, "left: " + survivor, nil
	})
	// The survivor started last (ties: the greater name), as the trimming orders them.
	if survivor == "trim-run-1" {
		t.Errorf("the oldest run %s was kept", survivor)
	}
}

// OpenKruise #862: with successfulJobsHistoryLimit 0 the finished run is deleted at once, and the
// same run must not start again (lastScheduleTime stays in status).
func TestAdvancedCronJobZeroHistoryRunsOnce(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "acj-once")
	schedule, at := cronRun()
	spec := cronJobOf(ns, "once", schedule, f.Image("public/busybox:1.35"), "true")
	spec.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
	acj := createPausedCronJob(ctx, t, kc, spec)
	resumeCronJob(ctx, t, kc, acj)
	name := acjRunName("once", at)
	first := waitJob(ctx, t, f, ns, name)
	f.WaitObjectEvent(ctx, t, ns, "AdvancedCronJob", "once", "SuccessfulDelete", 2*time.Minute, name)
	framework.Consistently(ctx, t, 5*time.Second, "the run not created again", func(ctx context.Context) (bool, string, error) {
		j, err := f.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return j.UID == first.UID, "uid " + string(j.UID), nil
	})
	waitCronStatus(ctx, t, kc, acj, "lastScheduleTime kept", func(a *appsv1beta1.AdvancedCronJob) bool {
		return a.Status.LastScheduleTime != nil && a.Status.LastScheduleTime.Time.Equal(at) && len(a.Status.Active) == 0
	})
}

// A BroadcastJob template: the run is a BroadcastJob (what it then does is the BroadcastJob
// controller's) carrying the template's labels (kruise's schema keeps the template's metadata,
// which OpenKruise's prunes).
func TestAdvancedCronJobBroadcastJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "acj-bcj")
	schedule, at := cronRun()
	spec := cronJobOf(ns, "sweep", schedule, "", "")
	spec.Spec.Template = appsv1beta1.CronJobTemplate{BroadcastJobTemplate: &appsv1beta1.BroadcastJobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "storage"}},
		Spec: appsv1beta1.BroadcastJobSpec{
			// No node matches: nothing runs, whichever BroadcastJob controller is deployed.
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{"kruise.e2e/no-such-node": "true"},
				Containers:    []corev1.Container{{Name: "sweep", Image: f.Image("public/busybox:1.35"), Command: []string{"true"}}},
			}},
		},
	}}
	acj := createPausedCronJob(ctx, t, kc, spec)
	resumeCronJob(ctx, t, kc, acj)
	name := acjRunName("sweep", at)
	var bcj *appsv1beta1.BroadcastJob
	framework.WaitFor(ctx, t, time.Minute, "BroadcastJob "+name, func(ctx context.Context) (bool, string, error) {
		b, err := kc.AppsV1beta1().BroadcastJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not created", nil
		}
		bcj = b
		return err == nil, "created", err
	})
	if bcj.Annotations[appsv1beta1.ScheduledAtAnnotation] != at.Format(time.RFC3339) {
		t.Errorf("annotations %v", bcj.Annotations)
	}
	if bcj.Labels["team"] != "storage" {
		t.Errorf("labels %v: the template's are missing", bcj.Labels)
	}
	if ref := metav1.GetControllerOf(bcj); ref == nil || ref.UID != acj.UID {
		t.Errorf("owner references %+v", bcj.OwnerReferences)
	}
	waitCronStatus(ctx, t, kc, acj, "type BroadcastJob, last scheduled", func(a *appsv1beta1.AdvancedCronJob) bool {
		return a.Status.Type == appsv1beta1.BroadcastJobTemplate && a.Status.LastScheduleTime != nil && a.Status.LastScheduleTime.Time.Equal(at)
	})
}

// The webhook refuses what OpenKruise's refuses: an unparsable schedule, a template change.
func TestAdvancedCronJobWebhook(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 2*time.Minute)
	ns := f.NewNamespace(ctx, t, "acj-webhook")
	bad := cronJobOf(ns, "bad", "every day", f.Image("public/busybox:1.35"), "true")
	_, err := kc.AppsV1beta1().AdvancedCronJobs(ns).Create(ctx, bad, metav1.CreateOptions{})
	var st apierrors.APIStatus
	if err == nil || !errors.As(err, &st) || !strings.Contains(err.Error(), "spec.schedule") {
		t.Fatalf("an unparsable schedule: got %v, want a refusal naming spec.schedule", err)
	}
	schedule, _ := cronRun()
	good, err := kc.AppsV1beta1().AdvancedCronJobs(ns).Create(ctx, cronJobOf(ns, "good", schedule, f.Image("public/busybox:1.35"), "true"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a valid AdvancedCronJob: %v", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := kc.AppsV1beta1().AdvancedCronJobs(ns).Get(ctx, good.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template.JobTemplate.Spec.Template.Spec.Containers[0].Command = []string{"false"}
		_, err = kc.AppsV1beta1().AdvancedCronJobs(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("a template change: got %v, want Forbidden", err)
	}
}

// The examples of docs/examples (docs/advancedcronjob.md runs them) are admitted as written, and
// the controller reads each one's template: created for real in a namespace of the test's, then
// status.type.
func TestAdvancedCronJobExamples(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 2*time.Minute)
	ns := f.NewNamespace(ctx, t, "acj-examples")
	for file, kind := range map[string]appsv1beta1.TemplateKind{
		"job": appsv1beta1.JobTemplate, "broadcastjob": appsv1beta1.BroadcastJobTemplate, "imagelistpulljob": appsv1beta1.ImageListPullJobTemplate,
	} {
		path := "../../docs/examples/advancedcronjob-" + file + ".yaml"
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		acj := &appsv1beta1.AdvancedCronJob{}
		if err := sigsyaml.UnmarshalStrict(raw, acj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		acj.Namespace = ns
		created, err := kc.AppsV1beta1().AdvancedCronJobs(ns).Create(ctx, acj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		waitCronStatus(ctx, t, kc, created, "status.type "+string(kind), func(a *appsv1beta1.AdvancedCronJob) bool { return a.Status.Type == kind })
	}
}
