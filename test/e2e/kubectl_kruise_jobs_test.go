//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// `create job NAME --from=acj/ACJ` runs a paused AdvancedCronJob's Job template now: the Job is
// created with the template's labels, the manual annotation and the ACJ as its controller, runs
// to completion and stays (one finished job is within the history limit, so a controller that
// trims by it keeps it); `describe acj/ACJ` lists it as a manual run. It needs only the CRDs,
// not the AdvancedCronJob controller, and passes with the controller running too.
func TestKubectlKruiseCreateJobFromACJ(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-acj")
	kruise := f.KruiseClient(t)
	template := framework.BusyboxJob(ns, "", f.Image("public/busybox:1.35"), "echo manual-run")
	template.Spec.TTLSecondsAfterFinished = nil
	acj := &appsv1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: appsv1beta1.AdvancedCronJobSpec{
			// Paused and yearly: no scheduled run interferes, whether or not a controller runs.
			Schedule: "0 3 1 1 *", Paused: ptr.To(true),
			Template: appsv1beta1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kk-report"}, Annotations: map[string]string{"team": "data"}},
				Spec:       template.Spec,
			}},
		},
	}
	acj, err := kruise.AppsV1beta1().AdvancedCronJobs(ns).Create(ctx, acj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating advancedcronjob: %v", err)
	}
	run := kubectlKruise(ctx, t)

	// A client dry run prints the Job and creates nothing.
	out, _, code := run("-n", ns, "create", "job", "report-now", "--from=acj/nightly", "--dry-run=client", "-o", "yaml")
	if code != 0 {
		t.Fatalf("create job --dry-run=client exited %d", code)
	}
	requireContains(t, "create job --dry-run=client -o yaml", out, "kind: Job", "cronjob.kubernetes.io/instantiate: manual", "app: kk-report", "kind: AdvancedCronJob", string(acj.UID))
	if _, err := f.Client.BatchV1().Jobs(ns).Get(ctx, "report-now", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after a client dry run, get job report-now: %v, want NotFound", err)
	}

	out, _, code = run("-n", ns, "create", "job", "report-now", "--from=advancedcronjob/nightly")
	if code != 0 {
		t.Fatalf("create job --from=advancedcronjob/nightly exited %d", code)
	}
	requireContains(t, "create job output", out, "job.batch/report-now created")
	job, err := f.Client.BatchV1().Jobs(ns).Get(ctx, "report-now", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading job report-now: %v", err)
	}
	if job.Labels["app"] != "kk-report" || job.Annotations["team"] != "data" || job.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
		t.Errorf("job labels %v, annotations %v: want the template's and instantiate=manual", job.Labels, job.Annotations)
	}
	if _, ok := job.Annotations[appsv1beta1.ScheduledAtAnnotation]; ok {
		t.Errorf("a job made by hand has %s", appsv1beta1.ScheduledAtAnnotation)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != acj.UID || ref.Kind != "AdvancedCronJob" {
		t.Errorf("job's controller reference %+v, want advancedcronjob %s", ref, acj.UID)
	}
	f.WaitJobComplete(ctx, t, ns, "report-now", 2*time.Minute)

	// The name is taken now: the API server's refusal is the error.
	_, stderr, code := run("-n", ns, "create", "job", "report-now", "--from=acj/nightly")
	if code == 0 || !strings.Contains(stderr, "already exists") {
		t.Errorf("a second create job report-now: exit %d, stderr %q; want a refusal", code, stderr)
	}
	_, stderr, code = run("-n", ns, "create", "job", "x", "--from=acj/missing")
	if code == 0 || !strings.Contains(stderr, "advancedcronjob "+ns+"/missing not found") {
		t.Errorf("create job from a missing acj: exit %d, stderr %q", code, stderr)
	}

	desc, _, code := run("-n", ns, "describe", "acj/nightly")
	if code != 0 {
		t.Fatalf("describe acj exited %d", code)
	}
	requireContains(t, "describe acj", desc, "Schedule:", "0 3 1 1 *", "Template:", "Next Run:", "<none: paused>", "Jobs:")
	if !regexp.MustCompile(`(?m)^\s+report-now\s+manual\s+Complete\s`).MatchString(desc) {
		t.Errorf("describe acj has no row `report-now manual Complete`:\n%s", desc)
	}
	// Still there: not taken for a run to trim or replace.
	if _, err := f.Client.BatchV1().Jobs(ns).Get(ctx, "report-now", metav1.GetOptions{}); err != nil {
		t.Errorf("job report-now after describe: %v", err)
	}
}

// A BroadcastJob template's job is a BroadcastJob: the API server (and any admission webhook)
// admits it in a server dry run; and describe reads a BroadcastJob and an EphemeralJob as the
// API serves them (no controller needed: a paused job and a selector that matches nothing).
func TestKubectlKruiseJobKinds(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-jobkinds")
	kruise := f.KruiseClient(t)
	pod := f.BusyboxPod(ns, "", "main")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	spec := appsv1beta1.BroadcastJobSpec{Paused: true, Template: corev1.PodTemplateSpec{Spec: pod.Spec}}
	acj := &appsv1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "sweep", Namespace: ns},
		Spec: appsv1beta1.AdvancedCronJobSpec{Schedule: "0 3 1 1 *", Paused: ptr.To(true),
			Template: appsv1beta1.CronJobTemplate{BroadcastJobTemplate: &appsv1beta1.BroadcastJobTemplateSpec{Spec: spec}}},
	}
	if _, err := kruise.AppsV1beta1().AdvancedCronJobs(ns).Create(ctx, acj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating advancedcronjob: %v", err)
	}
	run := kubectlKruise(ctx, t)
	out, _, code := run("-n", ns, "create", "job", "sweep-now", "--from=acj/sweep", "--dry-run=server", "-o", "name")
	if code != 0 {
		t.Fatalf("create job --dry-run=server of a BroadcastJob template exited %d", code)
	}
	requireContains(t, "create job --dry-run=server", out, "broadcastjob.apps.kruise.io/sweep-now")
	if _, err := kruise.AppsV1beta1().BroadcastJobs(ns).Get(ctx, "sweep-now", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a server dry run, get broadcastjob sweep-now: %v, want NotFound", err)
	}

	bcj := &appsv1beta1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: "sweep-paused", Namespace: ns}, Spec: spec}
	if _, err := kruise.AppsV1beta1().BroadcastJobs(ns).Create(ctx, bcj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating broadcastjob: %v", err)
	}
	ejob := &appsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Name: "debug-none", Namespace: ns},
		Spec: appsv1alpha1.EphemeralJobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kk-nothing"}},
			Template: appsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: f.Image("public/busybox:1.35"), Command: []string{"true"}},
			}}},
		},
	}
	if _, err := kruise.AppsV1alpha1().EphemeralJobs(ns).Create(ctx, ejob, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ephemeraljob: %v", err)
	}
	for target, wants := range map[string][]string{
		"bcj/sweep-paused":  {"Paused:", "true", "Container main:", "Pods Status:"},
		"ejob/debug-none":   {"Selector:", "app=kk-nothing", "debugger:", "Container States:", "<no pod matched>"},
		"acj/sweep":         {"Template:", "BroadcastJob", "Job States:"},
		"broadcastjob/nope": nil,
	} {
		desc, stderr, code := run("-n", ns, "describe", target)
		if wants == nil {
			if code == 0 || !strings.Contains(stderr, fmt.Sprintf("broadcastjob %s/nope not found", ns)) {
				t.Errorf("describe %s: exit %d, stderr %q; want not found", target, code, stderr)
			}
			continue
		}
		if code != 0 {
			t.Errorf("describe %s exited %d", target, code)
			continue
		}
		requireContains(t, "describe "+target, desc, wants...)
	}
}
