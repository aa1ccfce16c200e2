package validate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// AdvancedCronJobPath is where the API server sends AdvancedCronJobs (both versions, as v1beta1).
	AdvancedCronJobPath = "/validate-apps-kruise-io-advancedcronjob"
	// AdvancedCronJobWebhookName names it in the webhook server's metrics and logs.
	AdvancedCronJobWebhookName = "advancedcronjob-validate"

	// ReasonInvalidCronJobName: the name has a character OpenKruise refuses ('.') or is too long.
	ReasonInvalidCronJobName = "InvalidCronJobName"
	// ReasonInvalidSchedule: the schedule or the time zone does not parse, or both name a zone.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonInvalidCronJobSpec: a negative deadline or history limit, or a concurrency policy the
	// template does not take.
	ReasonInvalidCronJobSpec = "InvalidCronJobSpec"
	// ReasonInvalidCronJobTemplate: not exactly one template, or a template a run could not
	// create a job from.
	ReasonInvalidCronJobTemplate = "InvalidCronJobTemplate"
)

// AdvancedCronJobWebhook refuses an AdvancedCronJob, at CREATE and UPDATE, that OpenKruise's
// webhook refuses (never more): see docs/advancedcronjob.md, "API notes". It reads nothing
// from the API server.
func AdvancedCronJobWebhook() server.Webhook {
	w := workload[appsv1beta1.AdvancedCronJob]{
		kind: "AdvancedCronJob", resource: "advancedcronjobs",
		decode: decodeAdvancedCronJob,
		meta:   func(a *appsv1beta1.AdvancedCronJob) *metav1.ObjectMeta { return &a.ObjectMeta },
		check:  checkAdvancedCronJob,
	}
	return server.Webhook{
		Name: AdvancedCronJobWebhookName, Path: AdvancedCronJobPath, Admitter: server.AdmitFunc(w.admit),
		Reasons: []string{ReasonUndecodable, ReasonInvalidCronJobName, ReasonInvalidSchedule, ReasonInvalidCronJobSpec,
			ReasonInvalidCronJobTemplate, ReasonForbiddenUpdate},
	}
}

// decodeAdvancedCronJob reads either version as v1beta1: v1alpha1's JSON is v1beta1's without
// the ImageListPullJob template, so it decodes as it stands.
func decodeAdvancedCronJob(version string, raw []byte) (*appsv1beta1.AdvancedCronJob, error) {
	switch version {
	case appsv1beta1.SchemeGroupVersion.Version, appsv1alpha1.SchemeGroupVersion.Version:
		obj := &appsv1beta1.AdvancedCronJob{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
			return nil, fmt.Errorf("decoding the AdvancedCronJob %s: %w", version, err)
		}
		return obj, nil
	}
	return nil, errUnknownVersion
}
