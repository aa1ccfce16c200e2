package validate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// Bounds OpenKruise sets on an AdvancedCronJob.
const (
	cronJobNameMaxLen = 63
	// pullJobMaxImages and pullJobMaxDeadline bound an ImageListPullJob template.
	pullJobMaxImages   = 255
	pullJobMaxDeadline = 24 * 3600
)

// checkAdvancedCronJob returns what is wrong with acj, and with the update from old when old
// is not nil. The rules are OpenKruise's; as for the other kinds, an update is refused only for
// what it brings (OpenKruise checks the whole spec again), and it may change only the
// schedule, time zone, deadline, concurrency policy, history limits, pause and an
// ImageListPullJob template (as OpenKruise).
func checkAdvancedCronJob(acj, old *appsv1beta1.AdvancedCronJob) []problem {
	var out problems
	if old == nil {
		out.add(ReasonInvalidCronJobName, checkCronJobName(&acj.ObjectMeta))
	}
	var oldSpec *appsv1beta1.AdvancedCronJobSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	addSpecRules(&out, []specRule[appsv1beta1.AdvancedCronJobSpec]{
		{ReasonInvalidSchedule, checkCronSchedule},
		{ReasonInvalidCronJobSpec, checkCronJobNumbers},
		{ReasonInvalidCronJobTemplate, checkCronJobTemplate},
	}, &acj.Spec, oldSpec)
	if old != nil {
		out.add(ReasonForbiddenUpdate, checkCronJobUpdate(acj, old))
	}
	return out
}

// checkCronJobName: letters, digits and '-' (so no '.', which the API server would take), at
// most 63 characters; the generated name's prefix likewise.
func checkCronJobName(m *metav1.ObjectMeta) field.ErrorList {
	path, name := field.NewPath("metadata", "name"), m.Name
	if name == "" {
		path, name = field.NewPath("metadata", "generateName"), m.GenerateName
	}
	var errs field.ErrorList
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			errs = append(errs, field.Invalid(path, name, "an AdvancedCronJob's name may hold only letters, digits and '-'"))
			break
		}
	}
	if len(name) > cronJobNameMaxLen {
		errs = append(errs, field.TooLong(path, name, cronJobNameMaxLen))
	}
	return errs
}

// checkCronSchedule: the schedule parses (as the controller reads it), timeZone is an explicit
// IANA zone, and not both name a zone.
func checkCronSchedule(spec *appsv1beta1.AdvancedCronJobSpec) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(path.Child("schedule"), "a cron schedule"))
	}
	if err := cronjobs.TimeZoneError(spec.TimeZone); err != nil {
		errs = append(errs, field.Invalid(path.Child("timeZone"), *spec.TimeZone, err.Error()))
	}
	if spec.TimeZone != nil && cronjobs.HasTZPrefix(spec.Schedule) {
		errs = append(errs, field.Invalid(path.Child("schedule"), spec.Schedule, "cannot use both timeZone and a TZ or CRON_TZ prefix"))
	}
	if spec.Schedule != "" {
		if _, err := cronjobs.ParseSchedule(spec.Schedule, nil); err != nil {
			errs = append(errs, field.Invalid(path.Child("schedule"), spec.Schedule, err.Error()))
		}
	}
	return errs
}

// checkCronJobNumbers: no negative deadline or history limit.
func checkCronJobNumbers(spec *appsv1beta1.AdvancedCronJobSpec) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	if s := spec.StartingDeadlineSeconds; s != nil && *s < 0 {
		errs = append(errs, field.Invalid(path.Child("startingDeadlineSeconds"), *s, "must be greater than or equal to 0"))
	}
	if l := spec.SuccessfulJobsHistoryLimit; l != nil && *l < 0 {
		errs = append(errs, field.Invalid(path.Child("successfulJobsHistoryLimit"), *l, "must be greater than or equal to 0"))
	}
	if l := spec.FailedJobsHistoryLimit; l != nil && *l < 0 {
		errs = append(errs, field.Invalid(path.Child("failedJobsHistoryLimit"), *l, "must be greater than or equal to 0"))
	}
	return errs
}

// checkCronJobTemplate: exactly one template, and that one a run can create a job from.
func checkCronJobTemplate(spec *appsv1beta1.AdvancedCronJobSpec) field.ErrorList {
	path := field.NewPath("spec", "template")
	t := spec.Template
	var errs field.ErrorList
	n := 0
	if t.JobTemplate != nil {
		n++
		errs = append(errs, checkRunPodTemplate(path.Child("jobTemplate", "spec", "template"), &t.JobTemplate.Spec.Template)...)
	}
	if t.BroadcastJobTemplate != nil {
		n++
		// OpenKruise checks a BroadcastJob template's pod template only.
		errs = append(errs, checkRunPodTemplate(path.Child("broadcastJobTemplate", "spec", "template"), &t.BroadcastJobTemplate.Spec.Template)...)
	}
	if t.ImageListPullJobTemplate != nil {
		n++
		// Unset is Replace here (OpenKruise's mutating webhook writes it; kruise's controller
		// reads it so): Allow would run two pulls of one list at once.
		if spec.ConcurrencyPolicy == appsv1beta1.AllowConcurrent {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "concurrencyPolicy"), spec.ConcurrencyPolicy,
				[]appsv1beta1.ConcurrencyPolicy{appsv1beta1.ForbidConcurrent, appsv1beta1.ReplaceConcurrent}))
		}
		errs = append(errs, checkPullJobTemplate(path.Child("imageListPullJobTemplate", "spec"), &t.ImageListPullJobTemplate.Spec)...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(path, "one of jobTemplate, broadcastJobTemplate and imageListPullJobTemplate"))
	case n > 1:
		errs = append(errs, field.Forbidden(path, "only one of jobTemplate, broadcastJobTemplate and imageListPullJobTemplate may be set"))
	}
	return errs
}

// checkRunPodTemplate is a light form of Kubernetes' pod template validation, which
// OpenKruise applies (kruise does not link it): at least one container, every container named
// with a unique DNS label, a restartPolicy Kubernetes knows. Nothing it accepts is refused here.
func checkRunPodTemplate(path *field.Path, template *corev1.PodTemplateSpec) field.ErrorList {
	pod := &template.Spec
	spath := path.Child("spec")
	var errs field.ErrorList
	switch pod.RestartPolicy {
	case "", corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(spath.Child("restartPolicy"), pod.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	if len(pod.Containers) == 0 {
		errs = append(errs, field.Required(spath.Child("containers"), "a pod needs at least one container"))
	}
	seen := map[string]bool{}
	for i := range pod.InitContainers {
		errs = append(errs, checkName(spath.Child("initContainers").Index(i).Child("name"), pod.InitContainers[i].Name, seen)...)
	}
	for i := range pod.Containers {
		errs = append(errs, checkName(spath.Child("containers").Index(i).Child("name"), pod.Containers[i].Name, seen)...)
	}
	return errs
}

// checkPullJobTemplate is OpenKruise's check of an ImageListPullJob template: node selector by
// names or labels (not both), no podSelector with it, well-formed label selectors, 1 to 255
// distinct images that parse, completionPolicy Always (unset reads as Always) with a deadline of
// at most a day and not below pullPolicy.timeoutSeconds, and no ttlSecondsAfterFinished (the
// history limits delete finished runs).
func checkPullJobTemplate(path *field.Path, spec *appsv1beta1.ImageListPullJobSpec) field.ErrorList {
	var errs field.ErrorList
	if s := spec.Selector; s != nil {
		if len(s.Names) > 0 && (s.MatchLabels != nil || s.MatchExpressions != nil) {
			errs = append(errs, field.Invalid(path.Child("selector"), s, "names and a label selector cannot both be set"))
		}
		if _, err := metav1.LabelSelectorAsSelector(&s.LabelSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("selector"), s.LabelSelector, err.Error()))
		}
		seen := map[string]bool{}
		for i, n := range s.Names {
			if seen[n] {
				errs = append(errs, field.Duplicate(path.Child("selector", "names").Index(i), n))
			}
			seen[n] = true
		}
	}
	if s := spec.PodSelector; s != nil {
		if spec.Selector != nil {
			errs = append(errs, field.Invalid(path.Child("podSelector"), s, "selector and podSelector cannot both be set"))
		}
		if _, err := metav1.LabelSelectorAsSelector(&s.LabelSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("podSelector"), s.LabelSelector, err.Error()))
		}
	}
	switch n := len(spec.Images); {
	case n == 0:
		errs = append(errs, field.Required(path.Child("images"), "at least one image"))
	case n > pullJobMaxImages:
		errs = append(errs, field.TooMany(path.Child("images"), n, pullJobMaxImages))
	}
	seen := map[string]bool{}
	for i, img := range spec.Images {
		ipath := path.Child("images").Index(i)
		if seen[img] {
			errs = append(errs, field.Duplicate(ipath, img))
		}
		seen[img] = true
		if img == "" {
			errs = append(errs, field.Required(ipath, "an image reference"))
		}
		errs = append(errs, checkImage(ipath, img)...)
	}
	cp := spec.CompletionPolicy
	cpath := path.Child("completionPolicy")
	if cp.Type != "" && cp.Type != appsv1beta1.Always {
		errs = append(errs, field.NotSupported(cpath.Child("type"), cp.Type, []appsv1beta1.CompletionPolicyType{appsv1beta1.Always}))
	}
	if d := cp.ActiveDeadlineSeconds; d != nil {
		if *d > pullJobMaxDeadline {
			errs = append(errs, field.Invalid(cpath.Child("activeDeadlineSeconds"), *d, fmt.Sprintf("must be at most %d", pullJobMaxDeadline)))
		}
		if p := spec.PullPolicy; p != nil && p.TimeoutSeconds != nil && int64(*p.TimeoutSeconds) > *d {
			errs = append(errs, field.Invalid(cpath.Child("activeDeadlineSeconds"), *d,
				fmt.Sprintf("must be at least pullPolicy.timeoutSeconds (%d)", *p.TimeoutSeconds)))
		}
	}
	if cp.TTLSecondsAfterFinished != nil {
		errs = append(errs, field.Forbidden(cpath.Child("ttlSecondsAfterFinished"), "not supported in an AdvancedCronJob: its history limits delete finished runs"))
	}
	return errs
}

// checkCronJobUpdate: the Job and BroadcastJob templates, and the kind of template, are fixed
// once created (as in OpenKruise); the other fields may change.
func checkCronJobUpdate(acj, old *appsv1beta1.AdvancedCronJob) field.ErrorList {
	kept := acj.Spec.DeepCopy()
	kept.Schedule = old.Spec.Schedule
	kept.TimeZone = old.Spec.TimeZone
	kept.StartingDeadlineSeconds = old.Spec.StartingDeadlineSeconds
	kept.ConcurrencyPolicy = old.Spec.ConcurrencyPolicy
	kept.Paused = old.Spec.Paused
	kept.SuccessfulJobsHistoryLimit = old.Spec.SuccessfulJobsHistoryLimit
	kept.FailedJobsHistoryLimit = old.Spec.FailedJobsHistoryLimit
	if old.Spec.Template.ImageListPullJobTemplate != nil {
		kept.Template.ImageListPullJobTemplate = old.Spec.Template.ImageListPullJobTemplate
	}
	if apiequality.Semantic.DeepEqual(kept, &old.Spec) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec"), "only schedule, timeZone, startingDeadlineSeconds, concurrencyPolicy, "+
		"successfulJobsHistoryLimit, failedJobsHistoryLimit, paused and an imageListPullJobTemplate may change")}
}
