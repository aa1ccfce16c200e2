package validate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// MaxSpreadSubsets bounds the work one admission does (each subset's terms parsed and patch
// tried): the CRD's bound (maxItems), checked again here for a spread the schema did not see.
// OpenKruise sets no bound; a spread is a handful of zones or pools, so this refuses nothing real.
const MaxSpreadSubsets = 1000

// maxScheduleFailedSeconds is how long an Adaptive subset stays unschedulable (OpenKruise's 300 s):
// rescheduleCriticalSeconds times the subsets a pod may pass through must stay below it, less 5 s
// of reconcile slack, or a pod could cycle among unschedulable subsets for ever.
const maxScheduleFailedSeconds = 300

// templateOf is the target's pod template, with its claim templates as volumes (as the pods get
// them), that each subset's patch is tried on.
type templateOf struct {
	template corev1.PodTemplateSpec
}

// podTemplateOf reads spec.template and spec.volumeClaimTemplates of any kind; nil without a template.
func podTemplateOf(obj *unstructured.Unstructured) *templateOf {
	raw, ok, _ := unstructured.NestedMap(obj.Object, "spec", "template")
	if !ok {
		return nil
	}
	t := &templateOf{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &t.template); err != nil {
		return nil
	}
	claims, _, _ := unstructured.NestedSlice(obj.Object, "spec", "volumeClaimTemplates")
	for _, c := range claims {
		m, _ := c.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "metadata", "name")
		if name != "" {
			t.template.Spec.Volumes = append(t.template.Spec.Volumes, corev1.Volume{Name: name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		}
	}
	return t
}

func hasPatch(ws *appsv1alpha1.WorkloadSpread) bool {
	for _, s := range ws.Spec.Subsets {
		if len(s.Patch.Raw) > 0 {
			return true
		}
	}
	return false
}

// checkSpread is OpenKruise's checks of a WorkloadSpread: the target named, the subsets, the
// schedule strategy and the target filter; on UPDATE (old set) the target's group, kind and name
// kept, and a rule refuses only what the update brings (as the workloads' rules).
func checkSpread(ws, old *appsv1alpha1.WorkloadSpread, template *templateOf) problems {
	var out problems
	out.add(ReasonInvalidTargetRef, checkSpreadTarget(&ws.Spec))
	rules := []specRule[appsv1alpha1.WorkloadSpreadSpec]{
		{reason: ReasonInvalidSubsets, check: func(s *appsv1alpha1.WorkloadSpreadSpec) field.ErrorList { return checkSubsets(s, template) }},
		{reason: ReasonInvalidScheduleStrategy, check: checkScheduleStrategy},
		{reason: ReasonInvalidSelector, check: checkTargetFilter},
	}
	var oldSpec *appsv1alpha1.WorkloadSpreadSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	addSpecRules(&out, rules, &ws.Spec, oldSpec)
	if old != nil {
		out.add(ReasonForbiddenUpdate, checkTargetKept(ws.Spec.TargetReference, old.Spec.TargetReference))
	}
	return out
}

// checkSpreadTarget: apiVersion, kind and name set, the apiVersion parses. Any kind is allowed:
// kruise spreads any workload with a pod template (OpenKruise allows its five kinds and a
// configured list).
func checkSpreadTarget(spec *appsv1alpha1.WorkloadSpreadSpec) field.ErrorList {
	path := field.NewPath("spec", "targetRef")
	ref := spec.TargetReference
	if ref == nil {
		return field.ErrorList{field.Required(path, "the workload whose pods are spread")}
	}
	if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
		return field.ErrorList{field.Invalid(path, fmt.Sprintf("%s %s/%s", ref.APIVersion, ref.Kind, ref.Name), "apiVersion, kind and name are required")}
	}
	if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		return field.ErrorList{field.Invalid(path.Child("apiVersion"), ref.APIVersion, err.Error())}
	}
	return nil
}

// checkTargetKept: a spread's target's group, kind and name never change (its pods' records
// would belong to another workload).
func checkTargetKept(ref, old *appsv1alpha1.TargetReference) field.ErrorList {
	if ref == nil || old == nil {
		return nil
	}
	g, _ := schema.ParseGroupVersion(ref.APIVersion)
	og, _ := schema.ParseGroupVersion(old.APIVersion)
	if g.Group != og.Group || ref.Kind != old.Kind || ref.Name != old.Name {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "targetRef"), "the target's group, kind and name cannot change")}
	}
	return nil
}

func checkSubsets(spec *appsv1alpha1.WorkloadSpreadSpec, template *templateOf) field.ErrorList {
	path := field.NewPath("spec", "subsets")
	subsets := spec.Subsets
	switch {
	case len(subsets) == 0:
		return field.ErrorList{field.Required(path, "at least one subset")}
	case len(subsets) > MaxSpreadSubsets:
		return field.ErrorList{field.TooMany(path, len(subsets), MaxSpreadSubsets)}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range subsets {
		s := &subsets[i]
		p := path.Index(i)
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "a subset's name"))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen[s.Name] = true
		if s.RequiredNodeSelectorTerm != nil {
			errs = append(errs, checkNodeSelectorTerm(*s.RequiredNodeSelectorTerm, p.Child("requiredNodeSelectorTerm"))...)
		}
		for j, t := range s.PreferredNodeSelectorTerms {
			tp := p.Child("preferredNodeSelectorTerms").Index(j)
			if t.Weight < 1 || t.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, checkNodeSelectorTerm(t.Preference, tp.Child("preference"))...)
		}
		for j := range s.Tolerations {
			errs = append(errs, checkToleration(&s.Tolerations[j], p.Child("tolerations").Index(j))...)
		}
		if len(s.Patch.Raw) > 0 && template != nil {
			errs = append(errs, checkPatch(template, s.Patch.Raw, p.Child("patch"))...)
		}
	}
	return append(errs, checkMaxReplicas(spec)...)
}

// checkNodeSelectorTerm parses the term as the scheduler does (keys, operators, values).
func checkNodeSelectorTerm(term corev1.NodeSelectorTerm, path *field.Path) field.ErrorList {
	if len(term.MatchExpressions)+len(term.MatchFields) == 0 {
		return nil
	}
	_, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}, field.WithPath(path))
	if err == nil {
		return nil
	}
	return field.ErrorList{field.Invalid(path, field.OmitValueType{}, err.Error())}
}

// checkToleration is Kubernetes' toleration rules.
func checkToleration(t *corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(path.Child("key"), t.Key, msg))
		}
	}
	if t.Key == "" && t.Operator != corev1.TolerationOpExists {
		errs = append(errs, field.Invalid(path.Child("operator"), t.Operator, "operator must be Exists when key is empty"))
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		errs = append(errs, field.Invalid(path.Child("effect"), t.Effect, "effect must be NoExecute when tolerationSeconds is set"))
	}
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(path.Child("value"), t.Value, msg))
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(path.Child("value"), t.Value, "value must be empty when operator is Exists"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(path.Child("effect"), t.Effect,
			[]string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}))
	}
	return errs
}

// checkPatch tries the patch on the target's pod template: it must merge, and leave every
// container a unique name and an image (the pod webhook applies it to each pod the same way).
func checkPatch(t *templateOf, patch []byte, path *field.Path) field.ErrorList {
	pod := corev1.Pod{ObjectMeta: t.template.ObjectMeta, Spec: t.template.Spec}
	raw, err := json.Marshal(&pod)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	merged, err := strategicpatch.StrategicMergePatch(raw, patch, &corev1.Pod{})
	if err != nil {
		return field.ErrorList{field.Invalid(path, string(patch), fmt.Sprintf("does not merge into the target's pod template: %v", err))}
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(merged, out); err != nil {
		return field.ErrorList{field.Invalid(path, string(patch), fmt.Sprintf("does not make a pod of the target's pod template: %v", err))}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, c := range append(append([]corev1.Container{}, out.Spec.InitContainers...), out.Spec.Containers...) {
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(path.Child("containers").Index(i).Child("name"), "the patched pod's container has no name"))
		case names[c.Name]:
			errs = append(errs, field.Duplicate(path.Child("containers").Index(i).Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Image == "" {
			errs = append(errs, field.Required(path.Child("containers").Index(i).Child("image"), fmt.Sprintf("the patched pod's container %q has no image", c.Name)))
		}
	}
	return errs
}

// checkMaxReplicas: one type across subsets; counts not negative; a StatefulSet's counts only
// (its pods are placed by ordinal); percentages at most 100% in all, and 100% unless the last
// subset is unlimited.
func checkMaxReplicas(spec *appsv1alpha1.WorkloadSpreadSpec) field.ErrorList {
	path := field.NewPath("spec", "subsets")
	var first *intstr.Type
	sum := 0
	sts := spec.TargetReference != nil && spec.TargetReference.Kind == "StatefulSet"
	for i, s := range spec.Subsets {
		m := s.MaxReplicas
		if m == nil {
			continue
		}
		p := path.Index(i).Child("maxReplicas")
		if first == nil {
			first = &m.Type
		} else if m.Type != *first {
			return field.ErrorList{field.Invalid(p, m.String(), "every subset's maxReplicas must be of one type: counts or percentages")}
		}
		if sts && m.Type != intstr.Int {
			return field.ErrorList{field.Invalid(p, m.String(), "a StatefulSet's subsets take counts: its pods are placed by ordinal")}
		}
		v, ok := maxValue(m)
		if !ok {
			return field.ErrorList{field.Invalid(p, m.String(), "must be a non-negative count or a percentage such as \"34%\"")}
		}
		if m.Type == intstr.String {
			sum += v
			if sum > 100 {
				return field.ErrorList{field.Invalid(p, m.String(), "the subsets' percentages add up to more than 100%")}
			}
		}
	}
	if first != nil && *first == intstr.String && sum < 100 && spec.Subsets[len(spec.Subsets)-1].MaxReplicas != nil {
		return field.ErrorList{field.Invalid(path.Index(0).Child("maxReplicas"), spec.Subsets[0].MaxReplicas.String(),
			fmt.Sprintf("the subsets' percentages add up to %d%%: they must make 100%% unless the last subset has no maxReplicas", sum))}
	}
	return nil
}

func maxValue(m *intstr.IntOrString) (int, bool) {
	if m.Type == intstr.Int {
		return int(m.IntVal), m.IntVal >= 0
	}
	num, ok := strings.CutSuffix(m.StrVal, "%")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(num)
	return v, err == nil && v >= 0
}

// checkScheduleStrategy: Fixed or Adaptive; Adaptive settings only with Adaptive; with several
// subsets the last takes every pod (no maxReplicas) and rescheduleCriticalSeconds is in
// [0, (300-5)/(subsets-1)].
func checkScheduleStrategy(spec *appsv1alpha1.WorkloadSpreadSpec) field.ErrorList {
	path := field.NewPath("spec", "scheduleStrategy")
	st := spec.ScheduleStrategy
	var errs field.ErrorList
	switch st.Type {
	case "", appsv1alpha1.FixedWorkloadSpreadScheduleStrategyType, appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType:
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), st.Type, []string{string(appsv1alpha1.FixedWorkloadSpreadScheduleStrategyType),
			string(appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType)}))
	}
	a := st.Adaptive
	if a == nil {
		return errs
	}
	if st.Type != appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType {
		errs = append(errs, field.Invalid(path.Child("type"), st.Type, "must be Adaptive when adaptive is set"))
	}
	n := len(spec.Subsets)
	if n > 1 && spec.Subsets[n-1].MaxReplicas != nil {
		errs = append(errs, field.Invalid(path.Child("adaptive"), field.OmitValueType{}, "the last subset must have no maxReplicas with the Adaptive strategy: it takes the pods no other subset can"))
	}
	allowed := int32(math.MaxInt32)
	if n > 1 {
		allowed = int32((maxScheduleFailedSeconds - 5) / (n - 1))
	}
	if s := a.RescheduleCriticalSeconds; s != nil && (*s < 0 || *s > allowed) {
		errs = append(errs, field.Invalid(path.Child("adaptive", "rescheduleCriticalSeconds"), *s, fmt.Sprintf("must be in [0, %d]", allowed)))
	}
	return errs
}

// checkTargetFilter: its selector parses.
func checkTargetFilter(spec *appsv1alpha1.WorkloadSpreadSpec) field.ErrorList {
	f := spec.TargetFilter
	if f == nil || f.Selector == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(f.Selector); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "targetFilter", "selector"), metav1.FormatLabelSelector(f.Selector), err.Error())}
	}
	return nil
}
