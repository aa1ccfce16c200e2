package priorityinjection

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
)

// The pod webhook's matchConditions (CEL, GA since Kubernetes 1.30): the API
// server calls the webhook for a pod only when every condition holds, so a
// pod that cannot need launch priority is never sent and a kruise outage
// cannot block it. A webhook configuration that serves other pod mutations
// as well (SidecarSet injection) ORs MarkedExpression with theirs.
const (
	// MarkedExpression holds for a pod that has the launch-priority
	// annotation (any value: a wrong one is refused with its reason) or a
	// regular container with a KRUISE_CONTAINER_PRIORITY or
	// KRUISE_CONTAINER_BARRIER env var (a reserved one is refused). It is
	// false, never an error, when object is null (a DELETE) or the pod has
	// no containers (a typed pod without any is sent with containers: null;
	// validation refuses it after admission).
	MarkedExpression = `object != null && (` +
		`(has(object.metadata.annotations) && '` + lp.AnnotationPriority + `' in object.metadata.annotations) || ` +
		`(has(object.spec.containers) && object.spec.containers != null && object.spec.containers.exists(c, has(c.env) && ` +
		`c.env.exists(e, e.name == '` + lp.EnvPriority + `' || e.name == '` + lp.EnvBarrier + `'))))`

	// MarkedConditionName names MarkedExpression's condition in the
	// webhook configuration.
	MarkedConditionName = "launch-priority-marked"
)

// MatchConditions are the matchConditions of a webhook that serves only
// launch priority (all must hold) for kruise installed in kruiseNamespace:
// no pod of kube-system or of kruise's namespace (podscope), and only
// marked pods.
func MatchConditions(kruiseNamespace string) []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{
		podscope.Condition(kruiseNamespace),
		{Name: MarkedConditionName, Expression: MarkedExpression},
	}
}

// Marked is MarkedExpression in Go: whether the pod has the launch-priority
// annotation or a regular container with a KRUISE_CONTAINER_PRIORITY or
// KRUISE_CONTAINER_BARRIER env var. Mutate leaves every other pod as it is,
// so a pod the conditions do not send loses nothing.
func Marked(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[lp.AnnotationPriority]; ok {
		return true
	}
	for i := range pod.Spec.Containers {
		for _, e := range pod.Spec.Containers[i].Env {
			if e.Name == lp.EnvPriority || e.Name == lp.EnvBarrier {
				return true
			}
		}
	}
	return false
}
