package cronjobs

import (
	"errors"
	"fmt"
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Object is a job a run creates: a *batchv1.Job, a *v1beta1.BroadcastJob or a
// *v1beta1.ImageListPullJob.
type Object interface {
	metav1.Object
	runtime.Object
}

// KindOf is the kind of job acj's template creates; "" when it has no template (the webhook
// refuses that; the controller then does nothing). With several set (also refused), the first
// in the order Job, BroadcastJob, ImageListPullJob wins.
func KindOf(spec *v1beta1.AdvancedCronJobSpec) v1beta1.TemplateKind {
	switch t := spec.Template; {
	case t.JobTemplate != nil:
		return v1beta1.JobTemplate
	case t.BroadcastJobTemplate != nil:
		return v1beta1.BroadcastJobTemplate
	case t.ImageListPullJobTemplate != nil:
		return v1beta1.ImageListPullJobTemplate
	}
	return ""
}

// ConcurrencyOf is acj's concurrency policy with the unset value resolved: Allow, or Replace
// for an ImageListPullJob template (two pulls of the same list at once help no one), the
// defaults OpenKruise's mutating webhook writes.
func ConcurrencyOf(spec *v1beta1.AdvancedCronJobSpec) v1beta1.ConcurrencyPolicy {
	if spec.ConcurrencyPolicy != "" {
		return spec.ConcurrencyPolicy
	}
	if KindOf(spec) == v1beta1.ImageListPullJobTemplate {
		return v1beta1.ReplaceConcurrent
	}
	return v1beta1.AllowConcurrent
}

// ChildName is the name of the job acj creates for the run scheduled at t: the ACJ's name and
// the run's Unix time in seconds, as OpenKruise names it, so that one run is one name and a
// second create of it fails.
func ChildName(acjName string, t time.Time) string {
	return fmt.Sprintf("%s-%d", acjName, t.Unix())
}

// OwnerRef is the controller reference a run's job carries to acj (blocking acj's foreground
// deletion until the job is gone).
func OwnerRef(acj *v1beta1.AdvancedCronJob) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         v1beta1.SchemeGroupVersion.String(),
		Kind:               v1beta1.AdvancedCronJobKind,
		Name:               acj.Name,
		UID:                acj.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// ErrNoTemplate: the AdvancedCronJob has no template to build a job from.
var ErrNoTemplate = errors.New("the AdvancedCronJob has no template")

// ChildFor builds the job acj creates for the run scheduled at t: named ChildName, in acj's
// namespace, with the template's labels and annotations, annotation apps.kruise.io/scheduled-at
// (t in RFC 3339, UTC), a controller reference to acj and the template's spec (deep-copied). Its
// TypeMeta is set. The result is one of the types Object lists, by KindOf.
func ChildFor(acj *v1beta1.AdvancedCronJob, t time.Time) (Object, error) {
	meta := func(tm metav1.ObjectMeta) metav1.ObjectMeta {
		m := metav1.ObjectMeta{
			Name:            ChildName(acj.Name, t),
			Namespace:       acj.Namespace,
			Labels:          maps.Clone(tm.Labels),
			Annotations:     maps.Clone(tm.Annotations),
			OwnerReferences: []metav1.OwnerReference{OwnerRef(acj)},
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[v1beta1.ScheduledAtAnnotation] = t.UTC().Format(time.RFC3339)
		return m
	}
	tmpl := acj.Spec.Template
	switch KindOf(&acj.Spec) {
	case v1beta1.JobTemplate:
		return &batchv1.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
			ObjectMeta: meta(tmpl.JobTemplate.ObjectMeta),
			Spec:       *tmpl.JobTemplate.Spec.DeepCopy(),
		}, nil
	case v1beta1.BroadcastJobTemplate:
		return &v1beta1.BroadcastJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "BroadcastJob"},
			ObjectMeta: meta(tmpl.BroadcastJobTemplate.ObjectMeta),
			Spec:       *tmpl.BroadcastJobTemplate.Spec.DeepCopy(),
		}, nil
	case v1beta1.ImageListPullJobTemplate:
		return &v1beta1.ImageListPullJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ImageListPullJob"},
			ObjectMeta: meta(tmpl.ImageListPullJobTemplate.ObjectMeta),
			Spec:       *tmpl.ImageListPullJobTemplate.Spec.DeepCopy(),
		}, nil
	}
	return nil, ErrNoTemplate
}
