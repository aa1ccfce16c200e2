package validate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func cronJob(mods ...func(*appsv1beta1.AdvancedCronJob)) *appsv1beta1.AdvancedCronJob {
	a := &appsv1beta1.AdvancedCronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "AdvancedCronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: appsv1beta1.AdvancedCronJobSpec{
			Schedule: "0 2 * * *",
			Template: appsv1beta1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				}},
			}}},
		},
	}
	for _, m := range mods {
		m(a)
	}
	return a
}

func pullTemplate(mods ...func(*appsv1beta1.ImageListPullJobSpec)) func(*appsv1beta1.AdvancedCronJob) {
	return func(a *appsv1beta1.AdvancedCronJob) {
		spec := appsv1beta1.ImageListPullJobSpec{Images: []string{"busybox:1.36", "nginx"}}
		for _, m := range mods {
			m(&spec)
		}
		a.Spec.Template = appsv1beta1.CronJobTemplate{ImageListPullJobTemplate: &appsv1beta1.ImageListPullJobTemplateSpec{Spec: spec}}
	}
}

func cronJobRequest(t *testing.T, version string, acj, old *appsv1beta1.AdvancedCronJob) *admissionv1.AdmissionRequest {
	t.Helper()
	withVersion := func(a *appsv1beta1.AdvancedCronJob) *appsv1beta1.AdvancedCronJob {
		c := a.DeepCopy()
		c.APIVersion = "apps.kruise.io/" + version
		return c
	}
	req := request(t, "advancedcronjobs", "AdvancedCronJob", withVersion(acj), version)
	if old != nil {
		req.Operation = admissionv1.Update
		req.OldObject.Raw = request(t, "advancedcronjobs", "AdvancedCronJob", withVersion(old), version).Object.Raw
	}
	return req
}

func TestAdvancedCronJobWebhook(t *testing.T) {
	tests := []struct {
		name     string
		old, new *appsv1beta1.AdvancedCronJob
		reason   string
		message  []string
		// betaOnly: the case uses the ImageListPullJob template, which v1alpha1 does not have.
		betaOnly bool
	}{
		{name: "valid", new: cronJob()},
		{name: "descriptor and TZ prefix", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.Schedule = "TZ=Asia/Shanghai @daily" })},
		{name: "timeZone", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("Europe/Berlin") })},
		{name: "a BroadcastJob template", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
			a.Spec.Template = appsv1beta1.CronJobTemplate{BroadcastJobTemplate: &appsv1beta1.BroadcastJobTemplateSpec{Spec: appsv1beta1.BroadcastJobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "clean", Image: "busybox"}}}},
			}}}
		})},
		{
			// Kubernetes' pod template validation takes an empty image (config management fills
			// it in), and so does OpenKruise's check: so do we.
			name: "no image", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.Template.JobTemplate.Spec.Template.Spec.Containers[0].Image = ""
			}),
		},
		{
			name: "unparsable schedule", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.Schedule = "0 2 * *" }),
			reason: ReasonInvalidSchedule, message: []string{`AdvancedCronJob.apps.kruise.io "nightly" is invalid: spec.schedule: Invalid value: "0 2 * *"`},
		},
		{
			name: "TZ prefix without a schedule (the parser panics)", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.Schedule = "TZ=UTC" }),
			reason: ReasonInvalidSchedule, message: []string{`spec.schedule: Invalid value: "TZ=UTC"`},
		},
		{
			name: "timeZone and a TZ prefix", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.Schedule = "CRON_TZ=UTC 0 2 * * *"
				a.Spec.TimeZone = ptr.To("UTC")
			}),
			reason: ReasonInvalidSchedule, message: []string{"cannot use both timeZone and a TZ or CRON_TZ prefix"},
		},
		{
			name: "Local timeZone", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("Local") }),
			reason: ReasonInvalidSchedule, message: []string{`spec.timeZone: Invalid value: "Local"`},
		},
		{
			name: "empty timeZone", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("") }),
			reason: ReasonInvalidSchedule, message: []string{`spec.timeZone: Invalid value: ""`},
		},
		{
			name: "unknown timeZone", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("Mars/Olympus") }),
			reason: ReasonInvalidSchedule, message: []string{`spec.timeZone: Invalid value: "Mars/Olympus"`},
		},
		{
			name: "negative numbers", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.StartingDeadlineSeconds = ptr.To[int64](-1)
				a.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](-1)
				a.Spec.FailedJobsHistoryLimit = ptr.To[int32](-2)
			}),
			reason: ReasonInvalidCronJobSpec, message: []string{"spec.startingDeadlineSeconds: Invalid value: -1",
				"spec.successfulJobsHistoryLimit: Invalid value: -1", "spec.failedJobsHistoryLimit: Invalid value: -2"},
		},
		{
			name: "no template", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.Template = appsv1beta1.CronJobTemplate{} }),
			reason: ReasonInvalidCronJobTemplate, message: []string{"spec.template: Required value"},
		},
		{
			name: "two templates", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.Template.BroadcastJobTemplate = &appsv1beta1.BroadcastJobTemplateSpec{Spec: appsv1beta1.BroadcastJobSpec{
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
				}}
			}),
			reason: ReasonInvalidCronJobTemplate, message: []string{"spec.template: Forbidden: only one of"},
		},
		{
			name: "job pod template without containers, a duplicate name", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.Template.JobTemplate.Spec.Template.Spec.Containers = nil
				a.Spec.Template.JobTemplate.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "x"}, {Name: "x"}}
			}),
			reason: ReasonInvalidCronJobTemplate, message: []string{"spec.template.jobTemplate.spec.template.spec.containers: Required value",
				`spec.template.jobTemplate.spec.template.spec.initContainers[1].name: Duplicate value: "x"`},
		},
		{
			name: "BroadcastJob pod template with a bad container name", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.Template = appsv1beta1.CronJobTemplate{BroadcastJobTemplate: &appsv1beta1.BroadcastJobTemplateSpec{Spec: appsv1beta1.BroadcastJobSpec{
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "Clean_Up"}}}},
				}}}
			}),
			reason: ReasonInvalidCronJobTemplate, message: []string{`spec.template.broadcastJobTemplate.spec.template.spec.containers[0].name: Invalid value: "Clean_Up"`},
		},
		{
			name: "a name with a dot", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Name = "nightly.report" }),
			reason: ReasonInvalidCronJobName, message: []string{`metadata.name: Invalid value: "nightly.report"`},
		},
		{
			name: "a name too long", new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Name = strings.Repeat("a", 64) }),
			reason: ReasonInvalidCronJobName, message: []string{"metadata.name: Too long"},
		},
		{name: "pull template, policy unset (Replace)", new: cronJob(pullTemplate()), betaOnly: true},
		{name: "pull template, Forbid", new: cronJob(pullTemplate(), func(a *appsv1beta1.AdvancedCronJob) { a.Spec.ConcurrencyPolicy = appsv1beta1.ForbidConcurrent }), betaOnly: true},
		{
			name: "pull template, Allow", new: cronJob(pullTemplate(), func(a *appsv1beta1.AdvancedCronJob) { a.Spec.ConcurrencyPolicy = appsv1beta1.AllowConcurrent }),
			reason: ReasonInvalidCronJobTemplate, message: []string{`spec.concurrencyPolicy: Unsupported value: "Allow"`}, betaOnly: true,
		},
		{
			name: "pull template's images and selectors", new: cronJob(pullTemplate(func(s *appsv1beta1.ImageListPullJobSpec) {
				s.Images = []string{"nginx", "nginx", "UPPER/case"}
				s.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: []string{"n1", "n1"},
					LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}
				s.PodSelector = &appsv1beta1.ImagePullJobPodSelector{}
			})),
			reason: ReasonInvalidCronJobTemplate, betaOnly: true, message: []string{
				"spec.template.imageListPullJobTemplate.spec.selector: Invalid value", "names and a label selector cannot both be set",
				`spec.template.imageListPullJobTemplate.spec.selector.names[1]: Duplicate value: "n1"`,
				"selector and podSelector cannot both be set",
				`spec.template.imageListPullJobTemplate.spec.images[1]: Duplicate value: "nginx"`,
				`spec.template.imageListPullJobTemplate.spec.images[2]: Invalid value: "UPPER/case"`},
		},
		{
			name: "pull template's completion policy", new: cronJob(pullTemplate(func(s *appsv1beta1.ImageListPullJobSpec) {
				s.CompletionPolicy = appsv1beta1.CompletionPolicy{Type: appsv1beta1.Never, ActiveDeadlineSeconds: ptr.To[int64](100000),
					TTLSecondsAfterFinished: ptr.To[int32](10)}
			})),
			reason: ReasonInvalidCronJobTemplate, betaOnly: true, message: []string{
				`completionPolicy.type: Unsupported value: "Never"`, "completionPolicy.activeDeadlineSeconds: Invalid value: 100000",
				"completionPolicy.ttlSecondsAfterFinished: Forbidden"},
		},
		{
			name: "pull template's deadline below the pull timeout", new: cronJob(pullTemplate(func(s *appsv1beta1.ImageListPullJobSpec) {
				s.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](60)
				s.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600)}
			})),
			reason: ReasonInvalidCronJobTemplate, betaOnly: true, message: []string{"must be at least pullPolicy.timeoutSeconds (600)"},
		},
		{
			name: "update of the schedule, policy, limits, pause", old: cronJob(), new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.Schedule = "@hourly"
				a.Spec.TimeZone = ptr.To("UTC")
				a.Spec.ConcurrencyPolicy = appsv1beta1.ReplaceConcurrent
				a.Spec.Paused = ptr.To(true)
				a.Spec.StartingDeadlineSeconds = ptr.To[int64](30)
				a.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
				a.Spec.FailedJobsHistoryLimit = ptr.To[int32](0)
			}),
		},
		{
			name: "update of the job template", old: cronJob(), new: cronJob(func(a *appsv1beta1.AdvancedCronJob) {
				a.Spec.Template.JobTemplate.Spec.Template.Spec.Containers[0].Image = "busybox:2"
			}),
			reason: ReasonForbiddenUpdate, message: []string{"spec: Forbidden: only schedule"},
		},
		{
			name: "update of the pull template", old: cronJob(pullTemplate()), new: cronJob(pullTemplate(func(s *appsv1beta1.ImageListPullJobSpec) {
				s.Images = []string{"redis"}
			})), betaOnly: true,
		},
		{
			name: "update to a bad schedule", old: cronJob(), new: cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.Schedule = "hourly" }),
			reason: ReasonInvalidSchedule, message: []string{`spec.schedule: Invalid value: "hourly"`},
		},
		{
			name: "an update keeps a problem the stored object had",
			old:  cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.Schedule = "hourly" }),
			new:  cronJob(func(a *appsv1beta1.AdvancedCronJob) { a.Spec.Schedule = "hourly"; a.Spec.Paused = ptr.To(true) }),
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			if tt.betaOnly && version != "v1beta1" {
				continue
			}
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				serve(t, AdvancedCronJobWebhook()).judged(t, cronJobRequest(t, version, tt.new, tt.old), tt.reason, tt.message...)
			})
		}
	}
}

func TestAdvancedCronJobWebhookDeclaresItsReasons(t *testing.T) {
	assert.ElementsMatch(t, []string{"Undecodable", "InvalidCronJobName", "InvalidSchedule", "InvalidCronJobSpec", "InvalidCronJobTemplate", "ForbiddenUpdate"},
		AdvancedCronJobWebhook().Reasons)
	assert.Equal(t, "/validate-apps-kruise-io-advancedcronjob", AdvancedCronJobWebhook().Path, "OpenKruise's path")
}
