package validate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// broadcastJob is a valid v1beta1 BroadcastJob "warm" (restartPolicy Never, one container),
// changed by mods.
func broadcastJob(mods ...func(*appsv1beta1.BroadcastJob)) *appsv1beta1.BroadcastJob {
	j := &appsv1beta1.BroadcastJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "BroadcastJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: ns},
		Spec: appsv1beta1.BroadcastJobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "warm"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			},
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
		},
	}
	for _, m := range mods {
		m(j)
	}
	return j
}

func toV1alpha1BroadcastJob(j *appsv1beta1.BroadcastJob) *appsv1alpha1.BroadcastJob {
	return &appsv1alpha1.BroadcastJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "BroadcastJob"}, ObjectMeta: j.ObjectMeta,
		Spec: j.Spec, Status: j.Status,
	}
}

func TestBroadcastJobWebhook(t *testing.T) {
	never := func(j *appsv1beta1.BroadcastJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never }
	tests := []struct {
		name     string
		old, new *appsv1beta1.BroadcastJob
		reason   string
		message  []string
	}{
		{name: "valid", new: broadcastJob()},
		{name: "valid: OnFailure, Never policy, deadline-free", new: broadcastJob(never, func(j *appsv1beta1.BroadcastJob) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		})},
		{name: "valid: Always with deadline and TTL", new: broadcastJob(func(j *appsv1beta1.BroadcastJob) {
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](60)
			j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](10)
		})},
		{
			name: "name with a dot", new: broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Name = "warm.cache" }),
			reason: ReasonInvalidName, message: []string{`metadata.name: Invalid value: "warm.cache"`},
		},
		{
			name: "name longer than 63", new: broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Name = strings.Repeat("a", 64) }),
			reason: ReasonInvalidName, message: []string{`metadata.name: Too long`},
		},
		{
			name: "restartPolicy Always", new: broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }),
			reason:  ReasonInvalidTemplate,
			message: []string{`spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "Never", "OnFailure"`},
		},
		{
			name: "restartPolicy unset", new: broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Spec.Template.Spec.RestartPolicy = "" }),
			reason: ReasonInvalidTemplate, message: []string{`spec.template.spec.restartPolicy: Unsupported value: ""`},
		},
		{
			name: "preset pod labels", new: broadcastJob(func(j *appsv1beta1.BroadcastJob) {
				j.Spec.Template.Labels[appsv1beta1.BroadcastJobNameLabel] = "x"
				j.Spec.Template.Labels[appsv1beta1.BroadcastJobControllerUIDLabel] = "y"
			}),
			reason: ReasonInvalidTemplate,
			message: []string{`spec.template.metadata.labels[broadcastjob-name]: Forbidden`,
				`spec.template.metadata.labels[broadcastjob-controller-uid]: Forbidden`},
		},
		{
			name: "no image", new: broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Spec.Template.Spec.Containers[0].Image = "" }),
			reason: ReasonInvalidTemplate, message: []string{`spec.template.spec.containers[0].image: Required value`},
		},
		{
			name: "Never with TTL and deadline", new: broadcastJob(never, func(j *appsv1beta1.BroadcastJob) {
				j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](60)
				j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](10)
			}),
			reason: ReasonInvalidCompletionPolicy,
			message: []string{`spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 10: requires completionPolicy type Always`,
				`spec.completionPolicy.activeDeadlineSeconds: Invalid value: 60`},
		},
		{name: "update: paused", old: broadcastJob(), new: broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Spec.Paused = true })},
		{
			name: "update: an old name OpenKruise refuses stays updatable",
			old:  broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Name = "warm.cache" }),
			new:  broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Name = "warm.cache"; j.Spec.Paused = true }),
		},
		{
			name: "update that breaks the template", old: broadcastJob(),
			new:    broadcastJob(func(j *appsv1beta1.BroadcastJob) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }),
			reason: ReasonInvalidTemplate, message: []string{`restartPolicy`},
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				req := workloadRequest(t, "broadcastjobs", "BroadcastJob", version, tt.new, tt.old, toV1alpha1BroadcastJob)
				serve(t, BroadcastJobWebhook()).judged(t, req, tt.reason, tt.message...)
			})
		}
	}
}

func TestBroadcastJobWebhookDeclaresItsReasons(t *testing.T) {
	assert.ElementsMatch(t, []string{"Undecodable", "InvalidName", "InvalidCompletionPolicy", "InvalidTemplate"}, BroadcastJobWebhook().Reasons)
	assert.Equal(t, "/validate-apps-kruise-io-broadcastjob", BroadcastJobWebhook().Path, "OpenKruise's path")
}
