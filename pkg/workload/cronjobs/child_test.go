package cronjobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestKindAndConcurrency(t *testing.T) {
	spec := &v1beta1.AdvancedCronJobSpec{}
	assert.Equal(t, v1beta1.TemplateKind(""), KindOf(spec))
	spec.Template.ImageListPullJobTemplate = &v1beta1.ImageListPullJobTemplateSpec{}
	assert.Equal(t, v1beta1.ImageListPullJobTemplate, KindOf(spec))
	assert.Equal(t, v1beta1.ReplaceConcurrent, ConcurrencyOf(spec), "unset with a pull template: Replace")
	spec.ConcurrencyPolicy = v1beta1.ForbidConcurrent
	assert.Equal(t, v1beta1.ForbidConcurrent, ConcurrencyOf(spec))
	spec = &v1beta1.AdvancedCronJobSpec{}
	spec.Template.BroadcastJobTemplate = &v1beta1.BroadcastJobTemplateSpec{}
	assert.Equal(t, v1beta1.BroadcastJobTemplate, KindOf(spec))
	assert.Equal(t, v1beta1.AllowConcurrent, ConcurrencyOf(spec), "unset: Allow")
	spec.Template.JobTemplate = &batchv1.JobTemplateSpec{}
	assert.Equal(t, v1beta1.JobTemplate, KindOf(spec))
}

func TestChildFor(t *testing.T) {
	acj := &v1beta1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: types.UID("u1")},
	}
	_, err := ChildFor(acj, t0)
	assert.ErrorIs(t, err, ErrNoTemplate)

	acj.Spec.Template.JobTemplate = &batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "y"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	obj, err := ChildFor(acj, t0.In(shanghai))
	require.NoError(t, err)
	job, ok := obj.(*batchv1.Job)
	require.True(t, ok)
	assert.Equal(t, "nightly-1777896000", job.Name, "name and Unix seconds")
	assert.Equal(t, "ns", job.Namespace)
	assert.Equal(t, "Job", job.Kind)
	assert.Equal(t, "batch/v1", job.APIVersion)
	assert.Equal(t, map[string]string{"app": "x"}, job.Labels)
	assert.Equal(t, map[string]string{"note": "y", v1beta1.ScheduledAtAnnotation: "2026-05-04T12:00:00Z"}, job.Annotations)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "AdvancedCronJob", Name: "nightly",
		UID: "u1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}, job.OwnerReferences)
	assert.Equal(t, "busybox", job.Spec.Template.Spec.Containers[0].Image)

	job.Labels["app"] = "changed"
	job.Annotations["note"] = "changed"
	job.Spec.Template.Spec.Containers[0].Image = "changed"
	assert.Equal(t, "x", acj.Spec.Template.JobTemplate.Labels["app"], "the template is not shared")
	assert.Equal(t, "y", acj.Spec.Template.JobTemplate.Annotations["note"])
	assert.Equal(t, "busybox", acj.Spec.Template.JobTemplate.Spec.Template.Spec.Containers[0].Image)
	at, ok := ScheduledAt(job)
	assert.True(t, ok)
	assert.True(t, at.Equal(t0))

	acj.Spec.Template = v1beta1.CronJobTemplate{BroadcastJobTemplate: &v1beta1.BroadcastJobTemplateSpec{
		Spec: v1beta1.BroadcastJobSpec{Parallelism: ptr.To(intstr.FromInt32(2))},
	}}
	obj, err = ChildFor(acj, t0)
	require.NoError(t, err)
	bcj, ok := obj.(*v1beta1.BroadcastJob)
	require.True(t, ok)
	assert.Equal(t, "BroadcastJob", bcj.Kind)
	assert.Equal(t, "apps.kruise.io/v1beta1", bcj.APIVersion)
	assert.Equal(t, map[string]string{v1beta1.ScheduledAtAnnotation: "2026-05-04T12:00:00Z"}, bcj.Annotations)
	assert.Equal(t, acj.Spec.Template.BroadcastJobTemplate.Spec, bcj.Spec)

	acj.Spec.Template = v1beta1.CronJobTemplate{ImageListPullJobTemplate: &v1beta1.ImageListPullJobTemplateSpec{
		Spec: v1beta1.ImageListPullJobSpec{Images: []string{"busybox"}},
	}}
	obj, err = ChildFor(acj, t0)
	require.NoError(t, err)
	il, ok := obj.(*v1beta1.ImageListPullJob)
	require.True(t, ok)
	assert.Equal(t, "ImageListPullJob", il.Kind)
	assert.Equal(t, []string{"busybox"}, il.Spec.Images)
}

func TestScheduledAtWithoutAnnotation(t *testing.T) {
	_, ok := ScheduledAt(&batchv1.Job{})
	assert.False(t, ok)
	_, ok = ScheduledAt(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1beta1.ScheduledAtAnnotation: "soon"}}})
	assert.False(t, ok)
}
