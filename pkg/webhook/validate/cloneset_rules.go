package validate

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The rules of a CloneSet's spec the schema cannot check. What the CRD's CEL
// rules check (immutable selector, the int-or-string fields,
// progressDeadlineSeconds, maxSurge with InPlaceOnly, ...) is not repeated.

// cloneSetRules are checked in this order; a refusal's reason is the first
// rule's that found something.
func cloneSetRules() []specRule[appsv1beta1.CloneSetSpec] {
	return []specRule[appsv1beta1.CloneSetSpec]{
		{ReasonInvalidSelector, func(s *appsv1beta1.CloneSetSpec) field.ErrorList {
			return checkSelector("CloneSet", s.Selector, &s.Template)
		}},
		{ReasonInvalidTemplate, func(s *appsv1beta1.CloneSetSpec) field.ErrorList { return checkPodTemplate("CloneSet", &s.Template) }},
		{ReasonInvalidVolumeClaimTemplates, func(s *appsv1beta1.CloneSetSpec) field.ErrorList {
			return checkClaimTemplates(s.VolumeClaimTemplates, &s.Template)
		}},
		{ReasonDuplicatePodsToDelete, checkPodsToDelete},
	}
}

// checkPodsToDelete: no pod named twice.
func checkPodsToDelete(spec *appsv1beta1.CloneSetSpec) field.ErrorList {
	seen := map[string]bool{}
	var errs field.ErrorList
	for i, name := range spec.ScaleStrategy.PodsToDelete {
		if seen[name] {
			errs = append(errs, field.Duplicate(field.NewPath("spec", "scaleStrategy", "podsToDelete").Index(i), name))
		}
		seen[name] = true
	}
	return errs
}
