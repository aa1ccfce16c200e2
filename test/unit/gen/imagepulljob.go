package gen

import (
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ImagePullJobModifier changes an ImagePullJob.
type ImagePullJobModifier func(*appsv1beta1.ImagePullJob)

// ImagePullJob is an ImagePullJob named name, changed by mods in order.
func ImagePullJob(name string, mods ...ImagePullJobModifier) *appsv1beta1.ImagePullJob {
	return apply(&appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// ImagePullJobFrom is a copy of j changed by mods; j is left as it was.
func ImagePullJobFrom(j *appsv1beta1.ImagePullJob, mods ...ImagePullJobModifier) *appsv1beta1.ImagePullJob {
	return apply(j.DeepCopy(), mods)
}

func SetImagePullJobNamespace(ns string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Namespace = ns }
}

func SetImagePullJobUID(uid types.UID) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.UID = uid }
}

func SetImagePullJobResourceVersion(rv string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.ResourceVersion = rv }
}

func SetImagePullJobGeneration(g int64) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Generation = g }
}

func SetImagePullJobCreationTimestamp(at time.Time) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.CreationTimestamp = metav1.NewTime(at) }
}

func SetImagePullJobImage(image string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.Image = image }
}

// SetImagePullJobPullSecrets sets the names of the job's pull secrets (in
// its namespace).
func SetImagePullJobPullSecrets(secrets ...string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.PullSecrets = secrets }
}

// SetImagePullJobNodeNames selects the nodes named names, replacing the
// job's node selector.
func SetImagePullJobNodeNames(names ...string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: names}
	}
}

// SetImagePullJobNodeSelector selects the nodes whose labels match
// matchLabels, replacing the job's node selector.
func SetImagePullJobNodeSelector(matchLabels map[string]string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: matchLabels}}
	}
}

// SetImagePullJobPodSelector selects the nodes of the pods whose labels
// match matchLabels.
func SetImagePullJobPodSelector(matchLabels map[string]string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) {
		j.Spec.PodSelector = &appsv1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: matchLabels}}
	}
}

func SetImagePullJobParallelism(p intstr.IntOrString) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.Parallelism = &p }
}

func SetImagePullJobImagePullPolicy(p appsv1beta1.ImagePullPolicy) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.ImagePullPolicy = p }
}

// SetImagePullJobPullPolicy sets the per-node pull attempts' timeout and
// backoff limit.
func SetImagePullJobPullPolicy(p appsv1beta1.PullPolicy) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.PullPolicy = &p }
}

// SetImagePullJobCompletionType sets the completion policy's type (Always
// or Never) and keeps its other fields.
func SetImagePullJobCompletionType(t appsv1beta1.CompletionPolicyType) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = t }
}

func SetImagePullJobActiveDeadlineSeconds(s int64) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = &s }
}

func SetImagePullJobTTLSecondsAfterFinished(s int32) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.TTLSecondsAfterFinished = &s }
}

// SetImagePullJobSandboxLabels replaces the job's sandbox config by one
// holding a copy of labels.
func SetImagePullJobSandboxLabels(labels map[string]string) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) {
		j.Spec.SandboxConfig = &appsv1beta1.SandboxConfig{Labels: maps.Clone(labels)}
	}
}

func SetImagePullJobStartTime(at time.Time) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Status.StartTime = &metav1.Time{Time: at} }
}

func SetImagePullJobCompletionTime(at time.Time) ImagePullJobModifier {
	return func(j *appsv1beta1.ImagePullJob) { j.Status.CompletionTime = &metav1.Time{Time: at} }
}
