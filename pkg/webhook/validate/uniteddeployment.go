package validate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// UnitedDeploymentPath is where the UnitedDeployment webhook is served: OpenKruise's path.
	UnitedDeploymentPath = "/validate-apps-kruise-io-v1alpha1-uniteddeployment"
	// UnitedDeploymentWebhookName names it in the webhook server's metrics and logs.
	UnitedDeploymentWebhookName = "uniteddeployment-validate"
)

// UnitedDeploymentWebhook refuses a UnitedDeployment, at CREATE and UPDATE, that OpenKruise's
// rules refuse or that does not decode (its templates are schemaless): see docs/api.md,
// "UnitedDeployment". It reads nothing from the API server.
func UnitedDeploymentWebhook() server.Webhook {
	w := workload[appsv1alpha1.UnitedDeployment]{
		kind: "UnitedDeployment", resource: "uniteddeployments",
		decode: decodeUnitedDeployment,
		meta:   func(ud *appsv1alpha1.UnitedDeployment) *metav1.ObjectMeta { return &ud.ObjectMeta },
		check:  checkUnitedDeployment,
	}
	return server.Webhook{
		Name: UnitedDeploymentWebhookName, Path: UnitedDeploymentPath, Admitter: server.AdmitFunc(w.admit),
		Reasons: []string{ReasonUndecodable, ReasonForbiddenUpdate, ReasonInvalidTopology, ReasonInvalidSelector,
			ReasonInvalidTemplate, ReasonInvalidSubsetPatch, ReasonInvalidUpdateStrategy},
	}
}

// decodeUnitedDeployment reads a v1alpha1 UnitedDeployment as client-go does (field names
// case-sensitive, numbers checked against their Go types): a template with a number out of a
// 32-bit field's range or a value of the wrong type does not decode, and is refused.
func decodeUnitedDeployment(version string, raw []byte) (*appsv1alpha1.UnitedDeployment, error) {
	if version != appsv1alpha1.SchemeGroupVersion.Version {
		return nil, errUnknownVersion
	}
	ud := &appsv1alpha1.UnitedDeployment{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, ud); err != nil {
		return nil, err
	}
	return ud, nil
}
