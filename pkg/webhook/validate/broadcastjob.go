package validate

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// BroadcastJobPath is where the API server sends BroadcastJobs (both versions, as v1beta1).
	BroadcastJobPath = "/validate-apps-kruise-io-broadcastjob"
	// BroadcastJobWebhookName names it in the webhook server's metrics and logs.
	BroadcastJobWebhookName = "broadcastjob-validate"
)

// ReasonInvalidCompletionPolicy: a BroadcastJob's deadline or TTL with completionPolicy Never.
// (Its other reasons: ReasonUndecodable, ReasonInvalidName, the name is not letters, digits and
// '-' or longer than 63, which the pods' broadcastjob-name label carries; ReasonInvalidTemplate.)
const ReasonInvalidCompletionPolicy = "InvalidCompletionPolicy"

// BroadcastJobWebhook refuses, at CREATE and UPDATE, a BroadcastJob OpenKruise v1.9.0 refuses
// and the CRD schema cannot check: the name, the completion policy, the template's restart
// policy, containers and reserved labels. It reads nothing from the API server. Every field may
// change, as in OpenKruise.
func BroadcastJobWebhook() server.Webhook {
	w := workload[appsv1beta1.BroadcastJob]{
		kind: "BroadcastJob", resource: "broadcastjobs",
		decode: hubDecoder(func(a *appsv1alpha1.BroadcastJob) *appsv1beta1.BroadcastJob {
			return &appsv1beta1.BroadcastJob{TypeMeta: a.TypeMeta, ObjectMeta: a.ObjectMeta, Spec: a.Spec, Status: a.Status}
		}),
		meta:  func(j *appsv1beta1.BroadcastJob) *metav1.ObjectMeta { return &j.ObjectMeta },
		check: checkBroadcastJob,
	}
	return server.Webhook{
		Name: BroadcastJobWebhookName, Path: BroadcastJobPath, Admitter: server.AdmitFunc(w.admit),
		Reasons: []string{ReasonUndecodable, ReasonInvalidName, ReasonInvalidCompletionPolicy, ReasonInvalidTemplate},
	}
}

// broadcastJobName is OpenKruise's pattern of a BroadcastJob's name.
var broadcastJobName = regexp.MustCompile(`^[a-zA-Z0-9-]+$`)

const broadcastJobNameMaxLen = 63

// checkBroadcastJob returns what is wrong with job, and with the update from old when old is
// not nil. The name is checked at creation only (it cannot change).
func checkBroadcastJob(job, old *appsv1beta1.BroadcastJob) []problem {
	var out problems
	if old == nil {
		out.add(ReasonInvalidName, checkBroadcastJobName(job.Name))
	}
	var oldSpec *appsv1beta1.BroadcastJobSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	addSpecRules(&out, []specRule[appsv1beta1.BroadcastJobSpec]{
		{ReasonInvalidCompletionPolicy, checkBroadcastJobCompletion},
		{ReasonInvalidTemplate, checkBroadcastJobTemplate},
	}, &job.Spec, oldSpec)
	return out
}

func checkBroadcastJobName(name string) field.ErrorList {
	path := field.NewPath("metadata", "name")
	var errs field.ErrorList
	if name != "" && !broadcastJobName.MatchString(name) {
		errs = append(errs, field.Invalid(path, name, "must consist of letters, digits and '-' (e.g. 'example-com', regex '^[a-zA-Z0-9-]+$')"))
	}
	if len(name) > broadcastJobNameMaxLen {
		errs = append(errs, field.TooLong(path, name, broadcastJobNameMaxLen))
	}
	return errs
}

// checkBroadcastJobCompletion: completionPolicy Never (the job never finishes) has no deadline
// and no TTL. The CRD's CEL rule says the same; OpenKruise's webhook says it too, so an object
// stored before the rule is still refused on update only when the update brings it.
func checkBroadcastJobCompletion(spec *appsv1beta1.BroadcastJobSpec) field.ErrorList {
	c := spec.CompletionPolicy
	if c.Type != appsv1beta1.Never {
		return nil
	}
	path := field.NewPath("spec", "completionPolicy")
	var errs field.ErrorList
	if c.TTLSecondsAfterFinished != nil {
		errs = append(errs, field.Invalid(path.Child("ttlSecondsAfterFinished"), *c.TTLSecondsAfterFinished, "requires completionPolicy type Always"))
	}
	if c.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *c.ActiveDeadlineSeconds, "requires completionPolicy type Always"))
	}
	return errs
}

// checkBroadcastJobTemplate: the pods run to completion (restartPolicy Never or OnFailure), the
// template does not preset the labels the controller gives each pod, and the containers are
// as every workload's (checkContainers).
func checkBroadcastJobTemplate(spec *appsv1beta1.BroadcastJobSpec) field.ErrorList {
	path := field.NewPath("spec", "template")
	var errs field.ErrorList
	if rp := spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
		errs = append(errs, field.NotSupported(path.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure}))
	}
	for _, key := range []string{appsv1beta1.BroadcastJobNameLabel, appsv1beta1.BroadcastJobControllerUIDLabel} {
		if spec.Template.Labels[key] != "" {
			errs = append(errs, field.Forbidden(path.Child("metadata", "labels").Key(key), fmt.Sprintf("%q is set by the controller on each pod", key)))
		}
	}
	return append(errs, checkContainers(path.Child("spec"), &spec.Template.Spec)...)
}
