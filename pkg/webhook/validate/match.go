package validate

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// ControllerServiceAccount is the service account kruise-controller runs as,
// in the namespace kruise is installed in.
const ControllerServiceAccount = "kruise-controller"

// NotControllerConditionName names the matchCondition that keeps
// kruise-controller's own requests from the webhook.
const NotControllerConditionName = "not-kruise-controller"

// ControllerMatchConditions are the matchConditions of the
// ContainerRecreateRequest and ImagePullJob webhooks, with kruise installed
// in namespace: kruise-controller creates both kinds (the Job sidecar
// terminator its CRRs, the ImageListPullJob controller one ImagePullJob per
// image) and reports what is wrong with them in their status itself, so its
// requests are not sent: they never wait on a webhook kruise-controller
// serves, and an image the list job's webhook was not there to refuse fails
// its ImagePullJob in status, as the list job reports.
func ControllerMatchConditions(namespace string) []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{
		Name:       NotControllerConditionName,
		Expression: "request.userInfo.username != 'system:serviceaccount:" + namespace + ":" + ControllerServiceAccount + "'",
	}}
}
