package sidecarsetscope

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
	"github.com/nodekruise/kruise/pkg/process/selectorcel"
)

// The expressions the injection webhook's entry is called under. The API server evaluates a
// webhook's matchConditions before calling it, so a pod no SidecarSet can select never reaches
// kruise: an outage of kruise cannot block it, whatever the failurePolicy.
const (
	// NoneExpression is the condition with no SidecarSet to inject: never call.
	NoneExpression = webhookscope.NoneExpression
	// AnyLabelExpression is the fallback when the exact condition would be too large: every
	// SidecarSet needs a non-empty selector, so a pod without labels never needs the webhook.
	AnyLabelExpression = "object != null && has(object.metadata.labels) && size(object.metadata.labels) > 0"
	// MaxExpressionLength bounds the exact condition. The API server limits a matchCondition's
	// size and cost (estimated at write, and per call); an OR over many selectors grows
	// linearly. Measured on kube-apiserver 1.34: ~93 KiB (400 selectors) is accepted, ~187 KiB
	// refused; 32 KiB keeps a wide margin and covers ~130 single-label selectors.
	MaxExpressionLength = 32 << 10
)

// Expression is the matchCondition selecting the pods some of sets may inject into: the OR over
// the SidecarSets not paused of their selector on the pod's labels, and of the request's
// namespace when a namespaceSelector names exactly one namespace by kubernetes.io/metadata.name
// (any other namespaceSelector is left to the webhook: the condition is a superset). No such
// SidecarSet gives NoneExpression; one too large an OR gives AnyLabelExpression. The terms are
// sorted and deduplicated, so the same SidecarSets give the same text in any order.
func Expression(sets []*appsv1beta1.SidecarSet) string {
	return FromTerms(Terms(sets))
}

// Terms are the conditions of the SidecarSets of sets not paused, one each ("" ones left out).
func Terms(sets []*appsv1beta1.SidecarSet) []string {
	var terms []string
	for _, ss := range sets {
		if t := Term(ss); t != "" {
			terms = append(terms, t)
		}
	}
	return terms
}

// FromTerms is the matchCondition that is the OR of terms (Expression).
func FromTerms(terms []string) string {
	if len(terms) == 0 {
		return NoneExpression
	}
	terms = slices.Clone(terms)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	out := "object != null && (" + strings.Join(terms, " || ") + ")"
	if len(out) > MaxExpressionLength {
		return AnyLabelExpression
	}
	return out
}

// Term is the condition of ss: "" when it is paused or can select nothing.
func Term(ss *appsv1beta1.SidecarSet) string {
	if ss.Spec.InjectionStrategy.Paused {
		return ""
	}
	return term(ss)
}

// term is the condition of one SidecarSet, "" when it can select nothing.
func term(ss *appsv1beta1.SidecarSet) string {
	parts := selectorParts(ss.Spec.Selector)
	if len(parts) == 0 {
		// No selector, or an empty one, or one that does not parse: sidecarset.Selects selects
		// nothing with it.
		return ""
	}
	if ns, ok := singleNamespace(ss.Spec.NamespaceSelector); ok {
		parts = append([]string{"request.namespace == " + selectorcel.Quote(ns)}, parts...)
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// selectorParts are the requirements of sel as CEL, to be ANDed; none for a selector that
// selects nothing.
func selectorParts(sel *metav1.LabelSelector) []string {
	return selectorcel.Parts(sel, "object")
}

// singleNamespace is the one namespace sel selects by name (matchLabels, or an In with one
// value, on kubernetes.io/metadata.name, and nothing else).
func singleNamespace(sel *metav1.LabelSelector) (string, bool) {
	if sel == nil {
		return "", false
	}
	if len(sel.MatchLabels) == 1 && len(sel.MatchExpressions) == 0 {
		ns, ok := sel.MatchLabels[corev1.LabelMetadataName]
		return ns, ok
	}
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 1 {
		r := sel.MatchExpressions[0]
		if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0], true
		}
	}
	return "", false
}
