package create

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/test/unit/golden"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func acj(template appsv1beta1.CronJobTemplate) *appsv1beta1.AdvancedCronJob {
	return &appsv1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: "acj-uid"},
		Spec:       appsv1beta1.AdvancedCronJobSpec{Schedule: "0 2 * * *", Template: template},
	}
}

var (
	jobTemplate = appsv1beta1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}, Annotations: map[string]string{"team": "data"}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "report", Image: "report:v3", Args: []string{"--all"}}},
		}}},
	}}
	broadcastTemplate = appsv1beta1.CronJobTemplate{BroadcastJobTemplate: &appsv1beta1.BroadcastJobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "clean"}},
		Spec: appsv1beta1.BroadcastJobSpec{
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: "clean", Image: "busybox:1.36"}},
			}},
		},
	}}
	pullTemplate = appsv1beta1.CronJobTemplate{ImageListPullJobTemplate: &appsv1beta1.ImageListPullJobTemplateSpec{
		Spec: appsv1beta1.ImageListPullJobSpec{Images: []string{"app:v2", "sidecar:v1"}},
	}}
)

// testOptions are the options of `create job report-now --from=acj/nightly
// -n ns -o output --dry-run=dryRun` over fake clients holding objects.
func testOptions(t *testing.T, output string, dryRun cmdutil.DryRunStrategy, objects ...runtime.Object) (*JobOptions, *bytes.Buffer, *kubefake.Clientset, *kruisefake.Clientset) {
	t.Helper()
	out := &bytes.Buffer{}
	o := NewJobOptions(genericiooptions.IOStreams{Out: out, ErrOut: out})
	o.Name, o.From, o.Namespace, o.DryRun = "report-now", "acj/nightly", "ns", dryRun
	o.FieldManager, o.Validation = "kubectl-create", "Strict"
	o.now = func() time.Time { return now }
	*o.PrintFlags.OutputFormat = output
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, dryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		t.Fatal(err)
	}
	o.printObject = printer.PrintObj
	kube, kruise := kubefake.NewSimpleClientset(), kruisefake.NewSimpleClientset(objects...)
	o.Kube, o.Kruise = kube, kruise
	return o, out, kube, kruise
}

func creates(actions ...[]k8stesting.Action) []k8stesting.CreateActionImpl {
	var c []k8stesting.CreateActionImpl
	for _, list := range actions {
		for _, a := range list {
			if create, ok := a.(k8stesting.CreateActionImpl); ok {
				c = append(c, create)
			}
		}
	}
	return c
}

func TestCreateJobFromACJ(t *testing.T) {
	cases := []struct {
		name     string
		template appsv1beta1.CronJobTemplate
		output   string
		dryRun   cmdutil.DryRunStrategy
		// resource is what is created, "" for nothing.
		resource string
	}{
		{name: "job", template: jobTemplate, resource: "jobs"},
		{name: "job-yaml", template: jobTemplate, output: "yaml", dryRun: cmdutil.DryRunClient},
		{name: "broadcastjob-yaml", template: broadcastTemplate, output: "yaml", dryRun: cmdutil.DryRunClient},
		{name: "broadcastjob-name", template: broadcastTemplate, output: "name", resource: "broadcastjobs"},
		{name: "imagelistpulljob", template: pullTemplate, resource: "imagelistpulljobs"},
		{name: "server-dry-run", template: jobTemplate, dryRun: cmdutil.DryRunServer, resource: "jobs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, out, kube, kruise := testOptions(t, tc.output, tc.dryRun, acj(tc.template))
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "create-"+tc.name, out.String())
			c := creates(kube.Actions(), kruise.Actions())
			if tc.resource == "" {
				if len(c) != 0 {
					t.Fatalf("a client dry run sent %d creates", len(c))
				}
				return
			}
			if len(c) != 1 || c[0].GetResource().Resource != tc.resource || c[0].GetNamespace() != "ns" {
				t.Fatalf("creates = %v, want one of %s in ns", c, tc.resource)
			}
			opts := c[0].GetCreateOptions()
			wantDryRun := tc.dryRun == cmdutil.DryRunServer
			if (len(opts.DryRun) == 1 && opts.DryRun[0] == metav1.DryRunAll) != wantDryRun || opts.FieldManager != "kubectl-create" || opts.FieldValidation != "Strict" {
				t.Errorf("create options = %+v, want dryRun All %t, fieldManager kubectl-create, fieldValidation Strict", opts, wantDryRun)
			}
		})
	}
}

// The job is the template's, made by hand: named NAME, marked manual, no
// scheduled-at, controlled by the ACJ without blocking its deletion.
func TestManualJob(t *testing.T) {
	a := acj(jobTemplate)
	a.Spec.Template.JobTemplate.Annotations[appsv1beta1.ScheduledAtAnnotation] = "2026-01-01T00:00:00Z"
	obj, err := ManualJob(a, "report-now", now)
	if err != nil {
		t.Fatal(err)
	}
	job, ok := obj.(*batchv1.Job)
	if !ok {
		t.Fatalf("ManualJob of a Job template = %T", obj)
	}
	if job.Name != "report-now" || job.Namespace != "ns" {
		t.Errorf("job is %s/%s, want ns/report-now", job.Namespace, job.Name)
	}
	if job.Labels["app"] != "report" || job.Annotations["team"] != "data" || job.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
		t.Errorf("labels %v, annotations %v: want the template's and instantiate=manual", job.Labels, job.Annotations)
	}
	if _, ok := job.Annotations[appsv1beta1.ScheduledAtAnnotation]; ok {
		t.Errorf("a manual job has %s", appsv1beta1.ScheduledAtAnnotation)
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.UID != "acj-uid" || ref.Kind != "AdvancedCronJob" || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.BlockOwnerDeletion != nil {
		t.Errorf("controller reference %+v, want the ACJ's (v1beta1), not blocking its deletion", ref)
	}
	if job.Spec.Template.Spec.Containers[0].Image != "report:v3" || *job.Spec.BackoffLimit != 2 {
		t.Errorf("spec %+v is not the template's", job.Spec)
	}
	// The template is not changed through the job.
	job.Labels["app"] = "changed"
	if a.Spec.Template.JobTemplate.Labels["app"] != "report" {
		t.Error("changing the job changed the template")
	}
}

// --save-config writes kubectl's last-applied annotation, for kruise's
// kinds too.
func TestCreateJobSaveConfig(t *testing.T) {
	o, _, _, kruise := testOptions(t, "", cmdutil.DryRunNone, acj(broadcastTemplate))
	o.SaveConfig = true
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := creates(kruise.Actions())
	if len(c) != 1 {
		t.Fatalf("%d creates", len(c))
	}
	bcj := c[0].GetObject().(*appsv1beta1.BroadcastJob)
	if last := bcj.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !strings.Contains(last, `"kind":"BroadcastJob"`) {
		t.Errorf("last-applied-configuration = %q", last)
	}
}

func TestCreateJobErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*JobOptions)
		acj    *appsv1beta1.AdvancedCronJob
		want   string
	}{
		{name: "not found", want: "advancedcronjob ns/nightly not found: list them with `kubectl get acj -n ns`"},
		{name: "no template", acj: acj(appsv1beta1.CronJobTemplate{}), want: "advancedcronjob ns/nightly: the AdvancedCronJob has no template"},
		{name: "image too", mutate: func(o *JobOptions) { o.Image = "busybox" }, want: "either --image or --from"},
		{name: "command", mutate: func(o *JobOptions) { o.Command = []string{"date"} }, want: "cannot specify --from and a command"},
		{name: "no name", mutate: func(o *JobOptions) { o.From = "acj/" }, want: "names no AdvancedCronJob"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.acj != nil {
				objects = append(objects, tc.acj)
			}
			o, _, _, _ := testOptions(t, "", cmdutil.DryRunNone, objects...)
			if tc.mutate != nil {
				tc.mutate(o)
			}
			err := o.Validate()
			if err == nil {
				err = o.Run(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestACJName(t *testing.T) {
	cases := map[string]string{
		"acj/a": "a", "advancedcronjob/a": "a", "AdvancedCronJobs/a": "a", "acj.apps.kruise.io/a": "a",
		"cronjob/a": "", "a": "", "deploy/a": "",
	}
	for from, want := range cases {
		name, ok := acjName(from)
		if name != want || ok != (want != "") {
			t.Errorf("acjName(%q) = %q, %t; want %q", from, name, ok, want)
		}
	}
}

// --image and --from=cronjob/NAME go to kubectl's create job: a client dry
// run needs no server, and prints kubectl's Job.
func TestCreateJobHandsImageToKubectl(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: ns}}]
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	out := &bytes.Buffer{}
	cmd := NewCmdCreateJob(cmdutil.NewFactory(flags), genericiooptions.IOStreams{Out: out, ErrOut: out})
	cmd.SetArgs([]string{"pi", "--image=perl:5.34", "--dry-run=client", "-o", "yaml", "--", "perl", "-v"})
	cmd.SetOut(out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "create-image-kubectl", out.String())
}

func TestFromCompletions(t *testing.T) {
	kruise := kruisefake.NewSimpleClientset(acj(jobTemplate), &appsv1beta1.AdvancedCronJob{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}})
	names := func() ([]string, error) { return acjNames(context.Background(), kruise, "ns") }
	for toComplete, want := range map[string]string{
		"":                 "acj/,cronjob/",
		"ac":               "acj/,cronjob/",
		"cronjob/":         "",
		"acj/":             "acj/nightly",
		"acj/ni":           "acj/nightly",
		"advancedcronjob/": "advancedcronjob/nightly",
	} {
		got, _ := fromCompletions(toComplete, names)
		if strings.Join(got, ",") != want {
			t.Errorf("completions of --from=%s = %v, want %s", toComplete, got, want)
		}
	}
}
