package validate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// CloneSetPath is where the CloneSet webhook is served: OpenKruise's
	// path for its CloneSet validating webhook.
	CloneSetPath = "/validate-apps-kruise-io-cloneset"
	// CloneSetWebhookName names it in the webhook server's metrics and logs.
	CloneSetWebhookName = "cloneset-validate"
)

// CloneSetWebhook refuses a CloneSet, at CREATE and UPDATE, that the CRD
// schema cannot check (its template is schemaless) and kruise could not run:
// see docs/api.md, "CloneSet". It reads nothing from the API server. An
// InPlaceOnly template change is held to rules.
func CloneSetWebhook(rules InPlaceRules) server.Webhook {
	w := workload[appsv1beta1.CloneSet]{
		kind: "CloneSet", resource: "clonesets",
		decode: hubDecoder(appsv1alpha1.CloneSetToV1beta1),
		meta:   func(cs *appsv1beta1.CloneSet) *metav1.ObjectMeta { return &cs.ObjectMeta },
		check:  func(cs, old *appsv1beta1.CloneSet) []problem { return checkCloneSet(cs, old, rules) },
	}
	return server.Webhook{
		Name: CloneSetWebhookName, Path: CloneSetPath, Admitter: server.AdmitFunc(w.admit),
		Reasons: []string{ReasonUndecodable, ReasonForbiddenUpdate, ReasonInvalidSelector, ReasonInvalidTemplate,
			ReasonInvalidVolumeClaimTemplates, ReasonDuplicatePodsToDelete, ReasonNotInPlace},
	}
}
