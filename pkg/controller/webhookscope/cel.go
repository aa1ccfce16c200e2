package webhookscope

import (
	"slices"
	"strings"

	"github.com/nodekruise/kruise/pkg/process/selectorcel"
)

// NoneExpression is the condition of a scope with nothing in it: no request is sent.
const NoneExpression = "false"

// AnyOf is guard followed by the terms ORed (sorted, duplicates dropped), or NoneExpression
// without terms.
func AnyOf(guard string, terms []string) string {
	if len(terms) == 0 {
		return NoneExpression
	}
	terms = slices.Clone(terms)
	slices.Sort(terms)
	return guard + "(" + strings.Join(slices.Compact(terms), " || ") + ")"
}

// NamespacesExpression holds for requests in any of namespaces: the coarse scope a condition
// falls back to when the precise one is too long.
func NamespacesExpression(namespaces []string) string {
	if len(namespaces) == 0 {
		return NoneExpression
	}
	namespaces = slices.Clone(namespaces)
	slices.Sort(namespaces)
	return "request.namespace in " + selectorcel.List(slices.Compact(namespaces))
}

// WithTerm is current ORed with term (after guard), unless current has it already: what an
// object being admitted adds to a condition before the leader rewrites it whole.
func WithTerm(current, guard, term string) string {
	switch {
	case term == "" || strings.Contains(current, term):
		return current
	case current == "" || current == NoneExpression:
		return guard + "(" + term + ")"
	}
	return "(" + current + ") || (" + guard + term + ")"
}

// NamespaceOf is the namespace of a namespace/name key.
func NamespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}
