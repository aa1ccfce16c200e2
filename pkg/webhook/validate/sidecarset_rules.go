package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The SidecarSet's rules other than its containers' (sidecarset_containers.go).

// checkSidecarSetSelectors: the selectors are well formed (the schema checks
// that selector and namespaceSelector are set and not empty, not their
// syntax), and updateStrategy.selector, when set, not empty (OpenKruise's
// rule).
func checkSidecarSetSelectors(spec *appsv1beta1.SidecarSetSpec) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	for _, s := range []struct {
		path *field.Path
		sel  *metav1.LabelSelector
	}{
		{path.Child("selector"), spec.Selector},
		{path.Child("namespaceSelector"), spec.NamespaceSelector},
		{path.Child("updateStrategy", "selector"), spec.UpdateStrategy.Selector},
	} {
		if s.sel == nil {
			continue
		}
		if len(s.sel.MatchLabels)+len(s.sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(s.path, "{}", "empty: a SidecarSet's selectors must select something"))
			continue
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(s.sel, metav1validation.LabelSelectorValidationOptions{}, s.path)...)
	}
	return errs
}

// checkSidecarSetUpdateStrategy: a known type; maxUnavailable at most 100%;
// weight terms with a selector and order terms with a key (OpenKruise's
// rules). It is checked whatever the type: injectionStrategy.revision with
// policy Partial reads the strategy under NotUpdate too.
//
// Stricter than OpenKruise: maxUnavailable over 100% ("150%", likely a typo
// for 15%) is refused, since it would take down every matched pod at once;
// a partition over 100% holds every pod back, as 100% does, and is admitted.
func checkSidecarSetUpdateStrategy(spec *appsv1beta1.SidecarSetSpec) field.ErrorList {
	u := &spec.UpdateStrategy
	path := field.NewPath("spec", "updateStrategy")
	var errs field.ErrorList
	switch u.Type {
	case "", appsv1beta1.RollingUpdateSidecarSetStrategyType, appsv1beta1.NotUpdateSidecarSetStrategyType:
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), u.Type, []appsv1beta1.SidecarSetUpdateStrategyType{
			appsv1beta1.RollingUpdateSidecarSetStrategyType, appsv1beta1.NotUpdateSidecarSetStrategyType}))
	}
	if percent, ok := percentOf(u.MaxUnavailable); ok && percent > 100 {
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), u.MaxUnavailable.StrVal,
			"must not be more than 100% of the matched pods"))
	}
	if p := u.PriorityStrategy; p != nil {
		for i := range p.WeightPriority {
			sel := &p.WeightPriority[i].MatchSelector
			tpath := path.Child("priorityStrategy", "weightPriority").Index(i).Child("matchSelector")
			if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
				errs = append(errs, field.Required(tpath, "a weight term gives its weight to the pods its selector selects"))
				continue
			}
			errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, tpath)...)
		}
		for i, o := range p.OrderPriority {
			if o.OrderedKey == "" {
				errs = append(errs, field.Required(path.Child("priorityStrategy", "orderPriority").Index(i).Child("orderedKey"), ""))
			}
		}
	}
	return errs
}

// percentOf is v's percentage when it is one (the schema allows only digits
// and "%" in a string).
func percentOf(v *intstr.IntOrString) (int, bool) {
	if v == nil || v.Type != intstr.String {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, err == nil
}

// checkPatchPodMetadata: a known policy; annotation keys as the API server
// requires them of a pod; no key in two entries (OpenKruise's rules: which
// policy would win?); under MergePatchJson, values that are JSON objects.
//
// Stricter than OpenKruise, the last: the value is merged into the pod's
// annotation as a JSON merge patch, which only an object can be, so any
// other value would make the injection of every pod selected fail.
func checkPatchPodMetadata(spec *appsv1beta1.SidecarSetSpec) field.ErrorList {
	path := field.NewPath("spec", "patchPodMetadata")
	seen := map[string]bool{}
	var errs field.ErrorList
	for i, p := range spec.PatchPodMetadata {
		ppath := path.Index(i)
		switch p.PatchPolicy {
		case "", appsv1beta1.SidecarSetRetainPatchPolicy, appsv1beta1.SidecarSetOverwritePatchPolicy, appsv1beta1.SidecarSetMergePatchJsonPatchPolicy:
		default:
			errs = append(errs, field.NotSupported(ppath.Child("patchPolicy"), p.PatchPolicy, []appsv1beta1.SidecarSetPatchPolicyType{
				appsv1beta1.SidecarSetRetainPatchPolicy, appsv1beta1.SidecarSetOverwritePatchPolicy, appsv1beta1.SidecarSetMergePatchJsonPatchPolicy}))
		}
		apath := ppath.Child("annotations")
		errs = append(errs, apivalidation.ValidateAnnotations(p.Annotations, apath)...)
		for _, k := range slices.Sorted(maps.Keys(p.Annotations)) {
			if seen[k] {
				errs = append(errs, field.Duplicate(apath.Key(k), "patched by an earlier entry"))
			}
			seen[k] = true
			var obj map[string]any
			if p.PatchPolicy == appsv1beta1.SidecarSetMergePatchJsonPatchPolicy && json.Unmarshal([]byte(p.Annotations[k]), &obj) != nil {
				errs = append(errs, field.Invalid(apath.Key(k), p.Annotations[k],
					fmt.Sprintf("not a JSON object: policy %s merges it into the pod's value", p.PatchPolicy)))
			}
		}
	}
	return errs
}
