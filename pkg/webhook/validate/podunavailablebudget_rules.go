package validate

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// checkBudget returns what is wrong with pub, and with the update from old when old is not nil,
// in this order: annotations, what it covers, how many, what an update changes. Never stricter
// than OpenKruise's webhook for the same object (an empty protect-operations annotation, which it
// refuses, is read as the default here).
func checkBudget(pub, old *policyv1alpha1.PodUnavailableBudget) []problem {
	var out problems
	out.add(ReasonInvalidBudgetAnnotation, checkBudgetAnnotations(pub.Annotations))
	spec := field.NewPath("spec")
	switch s := &pub.Spec; {
	case s.Selector == nil && s.TargetReference == nil:
		out.add(ReasonInvalidSelector, field.ErrorList{field.Required(spec.Child("selector"), "one of selector and targetRef must be set")})
	case s.Selector != nil && s.TargetReference != nil:
		out.add(ReasonInvalidSelector, field.ErrorList{field.Forbidden(spec.Child("targetRef"), "selector and targetRef cannot both be set")})
	case s.TargetReference != nil:
		out.add(ReasonInvalidTargetRef, checkTargetRef(s.TargetReference, spec.Child("targetRef")))
	default:
		out.add(ReasonInvalidSelector, checkBudgetSelector(s.Selector, spec.Child("selector")))
	}
	switch s := &pub.Spec; {
	case s.MaxUnavailable == nil && s.MinAvailable == nil:
		out.add(ReasonInvalidBudgetCount, field.ErrorList{field.Required(spec.Child("maxUnavailable"), "one of maxUnavailable and minAvailable must be set")})
	case s.MaxUnavailable != nil && s.MinAvailable != nil:
		out.add(ReasonInvalidBudgetCount, field.ErrorList{field.Forbidden(spec.Child("minAvailable"), "maxUnavailable and minAvailable cannot both be set")})
	case s.MaxUnavailable != nil:
		out.add(ReasonInvalidBudgetCount, checkIntOrPercent(*s.MaxUnavailable, spec.Child("maxUnavailable")))
	default:
		out.add(ReasonInvalidBudgetCount, checkIntOrPercent(*s.MinAvailable, spec.Child("minAvailable")))
	}
	if old != nil {
		var errs field.ErrorList
		if !equality.Semantic.DeepEqual(pub.Spec.Selector, old.Spec.Selector) {
			errs = append(errs, field.Forbidden(spec.Child("selector"), "the selector of a PodUnavailableBudget cannot change"))
		}
		if !equality.Semantic.DeepEqual(pub.Spec.TargetReference, old.Spec.TargetReference) {
			errs = append(errs, field.Forbidden(spec.Child("targetRef"), "the targetRef of a PodUnavailableBudget cannot change"))
		}
		out.add(ReasonForbiddenUpdate, errs)
	}
	return out
}

// checkBudgetAnnotations: the operations guarded, the total replicas (an int32) and kruise's two
// switches ("true" or "false").
func checkBudgetAnnotations(annotations map[string]string) field.ErrorList {
	path := field.NewPath("metadata", "annotations")
	var errs field.ErrorList
	if v := annotations[policyv1alpha1.PubProtectOperationAnnotation]; v != "" {
		for _, op := range strings.Split(v, ",") {
			switch policyv1alpha1.PubOperation(op) {
			case policyv1alpha1.PubDeleteOperation, policyv1alpha1.PubEvictOperation, policyv1alpha1.PubUpdateOperation, policyv1alpha1.PubResizeOperation:
			default:
				errs = append(errs, field.NotSupported(path.Key(policyv1alpha1.PubProtectOperationAnnotation), op,
					[]string{"DELETE", "EVICT", "UPDATE", "RESIZE"}))
			}
		}
	}
	if v, ok := annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; ok {
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			errs = append(errs, field.Invalid(path.Key(policyv1alpha1.PubProtectTotalReplicasAnnotation), v, "must be a 32-bit integer"))
		}
	}
	for _, key := range []string{policyv1alpha1.PubProtectUnreadyPodsAnnotation, policyv1alpha1.PubBudgetPerWorkloadAnnotation} {
		if v, ok := annotations[key]; ok && v != "true" && v != "false" {
			errs = append(errs, field.NotSupported(path.Key(key), v, []string{"true", "false"}))
		}
	}
	return errs
}

func checkTargetRef(ref *policyv1alpha1.TargetReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIVersion == "" {
		errs = append(errs, field.Required(path.Child("apiVersion"), ""))
	} else if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	if ref.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), ""))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	return errs
}

func checkBudgetSelector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, path)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path, sel, "an empty selector would cover every pod of the namespace"))
	}
	return errs
}

var percent = regexp.MustCompile(`^[0-9]+%$`)

// checkIntOrPercent: a count of zero or more, or a percentage from 0% to 100%.
func checkIntOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if v.Type == intstr.Int {
		if v.IntValue() < 0 {
			return field.ErrorList{field.Invalid(path, v.IntValue(), "must be greater than or equal to 0")}
		}
		return nil
	}
	if !percent.MatchString(v.StrVal) {
		return field.ErrorList{field.Invalid(path, v.StrVal, "must be an integer or a percentage (e.g. '10%')")}
	}
	if n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%")); n > 100 {
		return field.ErrorList{field.Invalid(path, v.StrVal, "must not be greater than 100%")}
	}
	return nil
}

// budgetConflict says which of others covers pods pub covers too, as OpenKruise decides it: the
// same workload (group, kind, name), or selectors that overlap loosely (selectorsOverlapLoosely).
func budgetConflict(pub *policyv1alpha1.PodUnavailableBudget, others []policyv1alpha1.PodUnavailableBudget) field.ErrorList {
	for i := range others {
		other := &others[i]
		if other.Name == pub.Name {
			continue
		}
		a, b := pub.Spec.TargetReference, other.Spec.TargetReference
		switch {
		case a != nil && b != nil:
			ga, errA := schema.ParseGroupVersion(a.APIVersion)
			gb, errB := schema.ParseGroupVersion(b.APIVersion)
			if errA == nil && errB == nil && ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "targetRef"), a.Name,
					fmt.Sprintf("PodUnavailableBudget %s covers %s %s already: a pod can have one budget", other.Name, a.Kind, a.Name))}
			}
		case pub.Spec.Selector != nil && other.Spec.Selector != nil:
			if selectorsOverlapLoosely(pub.Spec.Selector, other.Spec.Selector) {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), metav1.FormatLabelSelector(pub.Spec.Selector),
					fmt.Sprintf("overlaps the selector of PodUnavailableBudget %s: a pod can have one budget", other.Name))}
			}
		}
	}
	return nil
}

// selectorsOverlapLoosely is OpenKruise's test of two budgets' selectors: they name the same label
// keys, and each key's requirements in a and b can both hold. Selectors on different keys never
// conflict, though a pod may carry both (as in OpenKruise: refusing more would break manifests it
// admits).
func selectorsOverlapLoosely(a, b *metav1.LabelSelector) bool {
	ra, rb := requirementsByKey(a), requirementsByKey(b)
	if len(ra) != len(rb) {
		return false
	}
	for k, x := range ra {
		y, ok := rb[k]
		if !ok || !requirementsOverlap(x, y) || !requirementsOverlap(y, x) {
			return false
		}
	}
	return true
}

// requirementsByKey is sel's requirements by key, matchLabels as In and taking precedence (one
// per key, as OpenKruise reads them).
func requirementsByKey(sel *metav1.LabelSelector) map[string]metav1.LabelSelectorRequirement {
	out := map[string]metav1.LabelSelectorRequirement{}
	for _, r := range sel.MatchExpressions {
		out[r.Key] = r
	}
	for k, v := range sel.MatchLabels {
		out[k] = metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}}
	}
	return out
}

// requirementsOverlap: some value of the key can satisfy both x and y (OpenKruise's table).
func requirementsOverlap(x, y metav1.LabelSelectorRequirement) bool {
	switch x.Operator {
	case metav1.LabelSelectorOpIn:
		switch y.Operator {
		case metav1.LabelSelectorOpExists:
			return true
		case metav1.LabelSelectorOpIn:
			return slices.ContainsFunc(x.Values, func(v string) bool { return slices.Contains(y.Values, v) })
		case metav1.LabelSelectorOpNotIn:
			return !containsAll(y.Values, x.Values)
		}
	case metav1.LabelSelectorOpExists:
		return y.Operator == metav1.LabelSelectorOpIn || y.Operator == metav1.LabelSelectorOpNotIn || y.Operator == metav1.LabelSelectorOpExists
	case metav1.LabelSelectorOpNotIn:
		switch y.Operator {
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist, metav1.LabelSelectorOpNotIn:
			return true
		case metav1.LabelSelectorOpIn:
			return !containsAll(x.Values, y.Values)
		}
	case metav1.LabelSelectorOpDoesNotExist:
		return y.Operator == metav1.LabelSelectorOpDoesNotExist || y.Operator == metav1.LabelSelectorOpNotIn
	}
	return false
}

// containsAll: every one of values is in set.
func containsAll(set, values []string) bool {
	for _, v := range values {
		if !slices.Contains(set, v) {
			return false
		}
	}
	return true
}
