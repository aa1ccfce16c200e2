package sidecarrules

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// MayOverlap says whether some pod could be selected by both a and b: their selectors, and their
// namespaceSelectors (none: every namespace), may both match one set of labels. It is decided from
// the selectors alone, never from the pods and namespaces there are now, since those change after
// the SidecarSets are admitted. A SidecarSet without a selector selects nothing.
func MayOverlap(a, b *appsv1beta1.SidecarSet) bool {
	if a.Spec.Selector == nil || b.Spec.Selector == nil {
		return false
	}
	if !SelectorsMayOverlap(a.Spec.Selector, b.Spec.Selector) {
		return false
	}
	if a.Spec.NamespaceSelector == nil || b.Spec.NamespaceSelector == nil {
		return true
	}
	return SelectorsMayOverlap(a.Spec.NamespaceSelector, b.Spec.NamespaceSelector)
}

// SelectorsMayOverlap says whether some set of labels matches both x and y. A label selector is
// a conjunction of requirements on single keys, and values are free strings, so the two overlap
// exactly when, key by key, the requirements of both together can be met: this answer is exact.
// It is never "no" for selectors that can match one object together, so a conflict is never
// missed; OpenKruise's test misses some (it takes {a: 1} and {a: 1, b exists} for disjoint) and
// refuses a few selectors that cannot overlap, which kruise admits.
func SelectorsMayOverlap(x, y *metav1.LabelSelector) bool {
	keys := map[string]*keyRequirement{}
	for _, sel := range []*metav1.LabelSelector{x, y} {
		if sel == nil {
			continue
		}
		for k, v := range sel.MatchLabels {
			requirementOf(keys, k).allow([]string{v})
		}
		for _, e := range sel.MatchExpressions {
			r := requirementOf(keys, e.Key)
			switch e.Operator {
			case metav1.LabelSelectorOpIn:
				r.allow(e.Values)
			case metav1.LabelSelectorOpNotIn:
				r.forbidden = append(r.forbidden, e.Values...)
			case metav1.LabelSelectorOpExists:
				r.present = true
			case metav1.LabelSelectorOpDoesNotExist:
				r.absent = true
			default:
				// An operator a label selector does not have: the selector does not parse and
				// selects nothing, but say "may overlap", the careful answer.
			}
		}
	}
	for _, r := range keys {
		if !r.satisfiable() {
			return false
		}
	}
	return true
}

// keyRequirement is what the selectors together ask of one label key.
type keyRequirement struct {
	present, absent bool
	// allowed, when restricted, are the values the key may have (In, matchLabels: each narrows it).
	restricted bool
	allowed    []string
	forbidden  []string // NotIn
}

func requirementOf(keys map[string]*keyRequirement, key string) *keyRequirement {
	r, ok := keys[key]
	if !ok {
		r = &keyRequirement{}
		keys[key] = r
	}
	return r
}

// allow narrows the allowed values to those also in values, and requires the key.
func (r *keyRequirement) allow(values []string) {
	r.present = true
	if !r.restricted {
		r.restricted, r.allowed = true, slices.Clone(values)
		return
	}
	r.allowed = slices.DeleteFunc(r.allowed, func(v string) bool { return !slices.Contains(values, v) })
}

// satisfiable says whether some label (or its absence) meets r. Without a restriction there are
// always values outside a finite NotIn list.
func (r *keyRequirement) satisfiable() bool {
	if r.present && r.absent {
		return false
	}
	if !r.restricted {
		return true
	}
	for _, v := range r.allowed {
		if !slices.Contains(r.forbidden, v) {
			return true
		}
	}
	return false
}
