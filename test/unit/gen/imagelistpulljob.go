package gen

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ImageListPullJobModifier changes an ImageListPullJob.
type ImageListPullJobModifier func(*appsv1beta1.ImageListPullJob)

// ImageListPullJob is an ImageListPullJob named name, changed by mods in order.
func ImageListPullJob(name string, mods ...ImageListPullJobModifier) *appsv1beta1.ImageListPullJob {
	return apply(&appsv1beta1.ImageListPullJob{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

func SetImageListPullJobNamespace(ns string) ImageListPullJobModifier {
	return func(j *appsv1beta1.ImageListPullJob) { j.Namespace = ns }
}

func SetImageListPullJobUID(uid types.UID) ImageListPullJobModifier {
	return func(j *appsv1beta1.ImageListPullJob) { j.UID = uid }
}

// SetImageListPullJobImages sets spec.images.
func SetImageListPullJobImages(images ...string) ImageListPullJobModifier {
	return func(j *appsv1beta1.ImageListPullJob) { j.Spec.Images = append([]string(nil), images...) }
}

func SetImageListPullJobPullSecrets(secrets ...string) ImageListPullJobModifier {
	return func(j *appsv1beta1.ImageListPullJob) { j.Spec.PullSecrets = append([]string(nil), secrets...) }
}

func SetImageListPullJobParallelism(p intstr.IntOrString) ImageListPullJobModifier {
	return func(j *appsv1beta1.ImageListPullJob) { j.Spec.Parallelism = &p }
}

func SetImageListPullJobActiveDeadlineSeconds(s int64) ImageListPullJobModifier {
	return func(j *appsv1beta1.ImageListPullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = &s }
}

func SetImageListPullJobTTLSecondsAfterFinished(s int32) ImageListPullJobModifier {
	return func(j *appsv1beta1.ImageListPullJob) { j.Spec.CompletionPolicy.TTLSecondsAfterFinished = &s }
}
