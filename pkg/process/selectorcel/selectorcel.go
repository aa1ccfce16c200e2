// Package selectorcel writes label selectors as CEL over an admission request's object, for the
// matchConditions that keep a webhook's requests to the objects some kruise object selects
// (SidecarSet injection, PodUnavailableBudgets). A webhook configuration's condition and the
// controller's own matching must agree, so both scopes build their conditions here.
package selectorcel

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Parts are the requirements of sel over the labels of obj ("object" or "oldObject"), as CEL
// expressions to be ANDed, in a stable order. nil for a nil selector or one that does not parse;
// an empty selector has no parts (it selects everything).
func Parts(sel *metav1.LabelSelector, obj string) []string {
	if sel == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return nil
	}
	l := labelsOf(obj)
	var parts []string
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, l.has(k)+" && "+l.value(k)+" == "+Quote(sel.MatchLabels[k]))
	}
	for _, r := range sel.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			parts = append(parts, l.has(r.Key)+" && "+l.value(r.Key)+" in "+List(r.Values))
		case metav1.LabelSelectorOpNotIn:
			parts = append(parts, "(!("+l.has(r.Key)+") || !("+l.value(r.Key)+" in "+List(r.Values)+"))")
		case metav1.LabelSelectorOpExists:
			parts = append(parts, l.has(r.Key))
		case metav1.LabelSelectorOpDoesNotExist:
			parts = append(parts, "!("+l.has(r.Key)+")")
		}
	}
	return parts
}

// labels names an object's labels map in CEL.
type labels string

func labelsOf(obj string) labels { return labels(obj) }

// has says the object has the label key (a missing labels map has none).
func (l labels) has(key string) string {
	return "has(" + string(l) + ".metadata.labels) && " + Quote(key) + " in " + string(l) + ".metadata.labels"
}

// value is the label's value (guard it with has).
func (l labels) value(key string) string {
	return string(l) + ".metadata.labels[" + Quote(key) + "]"
}

// List is a CEL list literal of values.
func List(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Quote is a CEL single-quoted string literal of s.
func Quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
