// Package podscope says which pods kruise's pod webhooks (SidecarSet injection, container launch
// priority, PodUnavailableBudget disruption) are never called for and never act on: those of
// kube-system and of kruise's own namespace. A webhook with failurePolicy Fail that selected kruise's own pods would keep kruise
// from coming back once its pods were gone: their ReplicaSet's creates would be sent to a
// webhook no replica serves, for ever. The exclusion is written three times, each enough alone:
// the configuration's namespaceSelector, a matchCondition (CEL, evaluated by the API server
// even if the selector is edited), and the handlers themselves.
package podscope

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionName names the matchCondition of Condition in the webhook configuration.
const ConditionName = "not-kube-system-or-kruise"

// KubeSystem is the namespace of the cluster's own components.
const KubeSystem = metav1.NamespaceSystem

// Namespaces are the namespaces excluded when kruise runs in kruiseNamespace, without
// duplicates (kruise may be installed in kube-system).
func Namespaces(kruiseNamespace string) []string {
	if kruiseNamespace == "" || kruiseNamespace == KubeSystem {
		return []string{KubeSystem}
	}
	return []string{KubeSystem, kruiseNamespace}
}

// Excluded is whether a pod in namespace is never acted on by kruise's pod webhooks.
func Excluded(namespace, kruiseNamespace string) bool {
	for _, ns := range Namespaces(kruiseNamespace) {
		if namespace == ns {
			return true
		}
	}
	return false
}

// Expression is the CEL condition that holds for a request outside the excluded namespaces.
func Expression(kruiseNamespace string) string {
	var terms []string
	for _, ns := range Namespaces(kruiseNamespace) {
		// A namespace name is a DNS label: nothing in it needs escaping in a CEL string.
		terms = append(terms, "request.namespace != '"+ns+"'")
	}
	return strings.Join(terms, " && ")
}

// Condition is the matchCondition named ConditionName with Expression.
func Condition(kruiseNamespace string) admissionregistrationv1.MatchCondition {
	return admissionregistrationv1.MatchCondition{Name: ConditionName, Expression: Expression(kruiseNamespace)}
}

// NamespaceSelector selects every namespace but the excluded ones, by the name label the API
// server sets on every namespace.
func NamespaceSelector(kruiseNamespace string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: Namespaces(kruiseNamespace),
	}}}
}
