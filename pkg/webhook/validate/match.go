package validate

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

// ControllerServiceAccount is the service account kruise-controller runs as,
// in the namespace kruise is installed in.
const ControllerServiceAccount = "kruise-controller"

// NotControllerConditionName names the matchCondition that keeps
// kruise-controller's own requests from the webhook.
const NotControllerConditionName = "not-kruise-controller"

// ControllerMatchConditions are the matchConditions of the
// ContainerRecreateRequest, ImagePullJob and CloneSet webhooks, with kruise
// installed in namespace. kruise-controller creates CRRs (the Job sidecar
// terminator) and ImagePullJobs (one per image of an ImageListPullJob) and
// reports what is wrong with them in their status itself, and writes
// CloneSets (it drops the names of gone pods from podsToDelete), so its
// requests are not sent: they never wait on a webhook kruise-controller
// serves, and an image the list job's webhook was not there to refuse fails
// its ImagePullJob in status, as the list job reports.
func ControllerMatchConditions(namespace string) []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{
		Name:       NotControllerConditionName,
		Expression: "request.userInfo.username != 'system:serviceaccount:" + namespace + ":" + ControllerServiceAccount + "'",
	}}
}

// SpecChangedConditionName names the matchCondition that sends a
// workload's update only when its spec changes.
const SpecChangedConditionName = "spec-changed"

// WorkloadMatchConditions are the matchConditions of the workload webhooks
// (CloneSet, StatefulSet, DaemonSet):
// ControllerMatchConditions, and an update that leaves spec as it was (a
// finalizer removed by the garbage collector, labels edited) is not sent,
// since every rule is about spec: such writes never wait on kruise, even
// when it is down and failurePolicy is Fail.
func WorkloadMatchConditions(namespace string) []admissionregistrationv1.MatchCondition {
	return append(ControllerMatchConditions(namespace), admissionregistrationv1.MatchCondition{
		Name:       SpecChangedConditionName,
		Expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec",
	})
}

// SpecOrCanaryChangedConditionName names the matchCondition of the
// SidecarSet webhook that sends an update only when its spec or its canary
// annotations change.
const SpecOrCanaryChangedConditionName = "spec-or-canary-changed"

// SidecarSetMatchConditions are the matchConditions of the SidecarSet
// webhook: ControllerMatchConditions, and, as for the workloads, an update
// is sent only when it changes what the rules read: the spec, or the canary
// annotations (a SidecarSet becoming a canary, or its base).
func SidecarSetMatchConditions(namespace string) []admissionregistrationv1.MatchCondition {
	expr := "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"
	for _, key := range []string{appsv1beta1.SidecarSetCanaryAnnotation, appsv1beta1.SidecarSetBaseAnnotation} {
		expr += " || " + annotationOf("object", key) + " != " + annotationOf("oldObject", key)
	}
	return append(ControllerMatchConditions(namespace), admissionregistrationv1.MatchCondition{
		Name: SpecOrCanaryChangedConditionName, Expression: expr,
	})
}

// annotationOf is a CEL expression of obj's annotation key, "" when unset.
func annotationOf(obj, key string) string {
	return "(has(" + obj + ".metadata.annotations) && '" + key + "' in " + obj + ".metadata.annotations ? " +
		obj + ".metadata.annotations['" + key + "'] : '')"
}

// SpecOrRequesterChangedConditionName names the matchCondition of the EphemeralJob webhooks that
// sends an update only when its spec or its requester annotation changes.
const SpecOrRequesterChangedConditionName = "spec-or-requester-changed"

// EphemeralJobMatchConditions are the matchConditions of both EphemeralJob webhooks:
// ControllerMatchConditions (its finalizer writes), and an update is sent only when it changes
// the spec or the requester annotation (apps.kruise.io/ephemeraljob-requester), so that
// whoever changes what the job does, or who it acts for, is recorded and checked, and nothing
// else waits on kruise.
func EphemeralJobMatchConditions(namespace string) []admissionregistrationv1.MatchCondition {
	return requesterMatchConditions(namespace, ejobaccess.RequesterAnnotation)
}

// PodProbeMarkerMatchConditions are the matchConditions of both PodProbeMarker webhooks, as the
// EphemeralJob ones with the requester annotation apps.kruise.io/podprobemarker-requester:
// kruise-controller's writes (its finalizer) and updates that keep the spec and the requester
// are not sent.
func PodProbeMarkerMatchConditions(namespace string) []admissionregistrationv1.MatchCondition {
	return requesterMatchConditions(namespace, nodeprobe.RequesterAnnotation)
}

func requesterMatchConditions(namespace, key string) []admissionregistrationv1.MatchCondition {
	expr := "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec || " +
		annotationOf("object", key) + " != " + annotationOf("oldObject", key)
	return append(ControllerMatchConditions(namespace), admissionregistrationv1.MatchCondition{
		Name: SpecOrRequesterChangedConditionName, Expression: expr,
	})
}
