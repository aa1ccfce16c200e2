package validate

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// The rules of a UnitedDeployment: OpenKruise v1.9.0's, with kruise's light pod-template checks
// in place of Kubernetes' full pod validation (not a dependency of kruise), and the subsets'
// patches tried on the template. Each names the field at fault.

// Why a UnitedDeployment is refused, besides ReasonUndecodable, ReasonForbiddenUpdate,
// ReasonInvalidSelector, ReasonInvalidTemplate and ReasonInvalidUpdateStrategy
// (manualUpdate.partitions names a subset that does not exist).
const (
	// ReasonInvalidTopology: a subset's name, nodeSelectorTerm or tolerations are malformed, or
	// the replicas, minReplicas and maxReplicas of the subsets do not add up with spec.replicas.
	ReasonInvalidTopology = "InvalidTopology"
	// ReasonInvalidSubsetPatch: a subset's patch does not merge into the pod template.
	ReasonInvalidSubsetPatch = "InvalidSubsetPatch"
)

// unitedDeploymentRules are the rules of the spec alone, in this order.
func unitedDeploymentRules() []specRule[appsv1alpha1.UnitedDeploymentSpec] {
	return []specRule[appsv1alpha1.UnitedDeploymentSpec]{
		{ReasonInvalidTopology, checkUDReplicas},
		{ReasonInvalidSelector, checkUDSelector},
		{ReasonInvalidTemplate, checkUDTemplate},
		{ReasonInvalidTopology, checkUDSubsets},
		{ReasonInvalidTopology, checkUDSubsetReplicas},
		{ReasonInvalidSubsetPatch, checkUDPatches},
		{ReasonInvalidUpdateStrategy, checkUDPartitions},
	}
}

// checkUnitedDeployment returns what is wrong with ud, and with the update from old when old is
// not nil.
func checkUnitedDeployment(ud, old *appsv1alpha1.UnitedDeployment) []problem {
	var out problems
	var oldSpec *appsv1alpha1.UnitedDeploymentSpec
	if old != nil {
		oldSpec = &old.Spec
		out.add(ReasonForbiddenUpdate, checkUDUpdate(&ud.Spec, oldSpec))
	}
	addSpecRules(&out, unitedDeploymentRules(), &ud.Spec, oldSpec)
	return out
}

var udSpecPath = field.NewPath("spec")

// checkUDReplicas: spec.replicas is not negative (the schema admits any 32-bit number).
func checkUDReplicas(spec *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	if spec.Replicas != nil && *spec.Replicas < 0 {
		return field.ErrorList{field.Invalid(udSpecPath.Child("replicas"), *spec.Replicas, "must be greater than or equal to 0")}
	}
	return nil
}

// checkUDSelector: required, not empty, well formed.
func checkUDSelector(spec *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	path := udSpecPath.Child("selector")
	sel := spec.Selector
	if sel == nil {
		return field.ErrorList{field.Required(path, "a UnitedDeployment finds its subsets' pods by this label selector")}
	}
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		return field.ErrorList{field.Invalid(path, "", "empty: it would select every pod of the namespace")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(errs) == 0 {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(path, metav1.FormatLabelSelector(sel), err.Error()))
		}
	}
	return errs
}

// udTemplate is the one template of a UnitedDeployment, as its parts the rules read.
type udTemplate struct {
	path   *field.Path // spec.template.<kind>Template
	kind   string      // StatefulSet, Advanced StatefulSet, CloneSet, Deployment
	labels map[string]string
	pod    *corev1.PodTemplateSpec
}

// udTemplates lists the templates set, in the order of the API.
func udTemplates(t *appsv1alpha1.SubsetTemplate) []udTemplate {
	path := udSpecPath.Child("template")
	var out []udTemplate
	if s := t.StatefulSetTemplate; s != nil {
		out = append(out, udTemplate{path.Child("statefulSetTemplate"), "StatefulSet", s.Labels, &s.Spec.Template})
	}
	if s := t.AdvancedStatefulSetTemplate; s != nil {
		out = append(out, udTemplate{path.Child("advancedStatefulSetTemplate"), "Advanced StatefulSet", s.Labels, &s.Spec.Template})
	}
	if s := t.CloneSetTemplate; s != nil {
		out = append(out, udTemplate{path.Child("cloneSetTemplate"), "CloneSet", s.Labels, &s.Spec.Template})
	}
	if s := t.DeploymentTemplate; s != nil {
		out = append(out, udTemplate{path.Child("deploymentTemplate"), "Deployment", s.Labels, &s.Spec.Template})
	}
	return out
}

const templateKinds = "statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate or deploymentTemplate"

// checkUDTemplate: exactly one template; its labels and its pod template's labels match the
// selector; replicas and partition, which the UnitedDeployment sets per subset, are not set; the
// pod template is one a workload can run (checkPodTemplate); reserveUnschedulablePods only with
// a stateless kind.
func checkUDTemplate(spec *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	path := udSpecPath.Child("template")
	all := udTemplates(&spec.Template)
	switch {
	case len(all) == 0:
		return field.ErrorList{field.Required(path, "one of "+templateKinds+" is the workload of every subset")}
	case len(all) > 1:
		var set []string
		for _, t := range all {
			set = append(set, t.path.String())
		}
		return field.ErrorList{field.Invalid(path, strings.Join(set, ", "), "only one of "+templateKinds+" may be set")}
	}
	t := all[0]
	var errs field.ErrorList
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && spec.Selector != nil && !sel.Empty() {
		if t.kind != "CloneSet" && !sel.Matches(labels.Set(t.labels)) {
			// OpenKruise's rule (not for CloneSets): the subset workloads are found by the selector.
			errs = append(errs, field.Invalid(t.path.Child("metadata", "labels"), labels.Set(t.labels).String(),
				fmt.Sprintf("does not match the selector %q: the UnitedDeployment would not find its subset workloads", sel.String())))
		}
		if !sel.Matches(labels.Set(t.pod.Labels)) {
			errs = append(errs, field.Invalid(t.path.Child("spec", "template", "metadata", "labels"), labels.Set(t.pod.Labels).String(),
				fmt.Sprintf("does not match the selector %q: the subset workloads would not own the pods they create", sel.String())))
		}
	}
	errs = append(errs, checkUDTemplateCounts(&spec.Template)...)
	errs = append(errs, rebase(checkPodTemplate(t.kind, t.pod), "spec.template", t.path.Child("spec", "template").String())...)
	if spec.Topology.ScheduleStrategy.ShouldReserveUnschedulablePods() && (t.kind == "StatefulSet" || t.kind == "Advanced StatefulSet") {
		errs = append(errs, field.Invalid(udSpecPath.Child("topology", "scheduleStrategy", "adaptive", "reserveUnschedulablePods"), true,
			"only stateless subsets (Deployment and CloneSet) can keep unschedulable pods reserved"))
	}
	return errs
}

// checkUDTemplateCounts: the StatefulSet, Advanced StatefulSet and Deployment templates do not
// set replicas, nor the StatefulSets a rolling update's partition: the UnitedDeployment sets them
// per subset, so they would be ignored (OpenKruise's rule). The Advanced StatefulSet's schema
// defaults replicas to 1 and a rollingUpdate's partition to 0, so those values count as unset.
func checkUDTemplateCounts(t *appsv1alpha1.SubsetTemplate) field.ErrorList {
	var errs field.ErrorList
	ignored := func(path *field.Path, v int32, kind string) {
		errs = append(errs, field.Invalid(path, v, "the UnitedDeployment sets it per subset; leave it out of the "+kind))
	}
	partition := func(path *field.Path, typ appsv1.StatefulSetUpdateStrategyType, p *int32, schemaDefault bool, kind string) {
		if (typ == "" || typ == appsv1.RollingUpdateStatefulSetStrategyType) && p != nil && !(schemaDefault && *p == 0) {
			ignored(path.Child("spec", "updateStrategy", "rollingUpdate", "partition"), *p, kind)
		}
	}
	path := udSpecPath.Child("template")
	if s := t.StatefulSetTemplate; s != nil {
		p := path.Child("statefulSetTemplate")
		if s.Spec.Replicas != nil {
			ignored(p.Child("spec", "replicas"), *s.Spec.Replicas, "statefulSetTemplate")
		}
		if s.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && s.Spec.UpdateStrategy.RollingUpdate != nil {
			partition(p, s.Spec.UpdateStrategy.Type, s.Spec.UpdateStrategy.RollingUpdate.Partition, false, "statefulSetTemplate")
		}
	}
	if s := t.AdvancedStatefulSetTemplate; s != nil {
		p := path.Child("advancedStatefulSetTemplate")
		if s.Spec.Replicas != nil && *s.Spec.Replicas != 1 {
			ignored(p.Child("spec", "replicas"), *s.Spec.Replicas, "advancedStatefulSetTemplate")
		}
		if s.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && s.Spec.UpdateStrategy.RollingUpdate != nil {
			partition(p, s.Spec.UpdateStrategy.Type, s.Spec.UpdateStrategy.RollingUpdate.Partition, true, "advancedStatefulSetTemplate")
		}
	}
	if s := t.DeploymentTemplate; s != nil && s.Spec.Replicas != nil {
		ignored(path.Child("deploymentTemplate", "spec", "replicas"), *s.Spec.Replicas, "deploymentTemplate")
	}
	return errs
}

// rebase rewrites the field paths of errs that start with from to start with to.
func rebase(errs field.ErrorList, from, to string) field.ErrorList {
	for _, e := range errs {
		if rest, ok := strings.CutPrefix(e.Field, from); ok {
			e.Field = to + rest
		}
	}
	return errs
}

// checkUDSubsets: each subset has a unique DNS-label name, a well-formed nodeSelectorTerm and
// tolerations, and, under Adaptive, no replicas (minReplicas/maxReplicas say where pods may go).
func checkUDSubsets(spec *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	path := udSpecPath.Child("topology", "subsets")
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range spec.Topology.Subsets {
		s := &spec.Topology.Subsets[i]
		p := path.Index(i)
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "a subset's name names its workload"))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(s.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		seen[s.Name] = true
		errs = append(errs, checkNodeSelectorTerm(s.NodeSelectorTerm, p.Child("nodeSelectorTerm"))...)
		for j := range s.Tolerations {
			errs = append(errs, checkToleration(&s.Tolerations[j], p.Child("tolerations").Index(j))...)
		}
		if s.Replicas != nil && spec.Topology.ScheduleStrategy.IsAdaptive() {
			errs = append(errs, field.Forbidden(p.Child("replicas"),
				"with scheduleStrategy Adaptive, say where pods may go with minReplicas/maxReplicas instead"))
		}
	}
	return errs
}

// unlimitedSubset is what a subset without maxReplicas counts as in OpenKruise's arithmetic.
const unlimitedSubset = 1000000

// checkUDSubsetReplicas is OpenKruise's arithmetic of the subsets' replicas: replicas and
// minReplicas/maxReplicas are exclusive. With min/max: spec.replicas is set, at least one subset
// has no maxReplicas (it takes what is left), each minReplicas ≤ its maxReplicas, and
// Σ minReplicas ≤ Σ maxReplicas. Otherwise: Σ replicas ≤ spec.replicas, equal when every subset
// says its replicas; without spec.replicas every subset says its replicas.
func checkUDSubsetReplicas(spec *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	path := udSpecPath.Child("topology", "subsets")
	subsets := spec.Topology.Subsets
	total := int32(-1)
	if spec.Replicas != nil && *spec.Replicas >= 0 {
		total = *spec.Replicas
	}
	var errs field.ErrorList
	var sum, sumMin, sumMax int64
	var withReplicas, withMax int
	minMax := false
	for i := range subsets {
		s, p := &subsets[i], path.Index(i)
		parse := func(v *intstr.IntOrString, name string, unset int32) int32 {
			if v == nil {
				return unset
			}
			n, err := appsv1alpha1.SubsetReplicaCount(total, *v)
			if err != nil {
				errs = append(errs, field.Invalid(p.Child(name), v.String(), err.Error()))
			}
			return n
		}
		if s.Replicas != nil {
			withReplicas++
		}
		sum += int64(parse(s.Replicas, "replicas", 0))
		if s.MinReplicas != nil || s.MaxReplicas != nil {
			minMax = true
		}
		if s.MaxReplicas != nil {
			withMax++
		}
		lo, hi := parse(s.MinReplicas, "minReplicas", 0), parse(s.MaxReplicas, "maxReplicas", unlimitedSubset)
		sumMin, sumMax = sumMin+int64(lo), sumMax+int64(hi)
		if lo > hi {
			errs = append(errs, field.Invalid(p.Child("minReplicas"), s.MinReplicas.String(),
				fmt.Sprintf("is more than maxReplicas (%s)", s.MaxReplicas.String())))
		}
	}
	switch {
	case withReplicas > 0 && minMax:
		errs = append(errs, field.Invalid(path, "replicas and minReplicas/maxReplicas",
			"a UnitedDeployment shares its replicas either by subset replicas or by minReplicas/maxReplicas, not both"))
	case minMax:
		if spec.Replicas == nil {
			errs = append(errs, field.Required(udSpecPath.Child("replicas"), "minReplicas/maxReplicas share spec.replicas among the subsets"))
		}
		if withMax == len(subsets) {
			errs = append(errs, field.Invalid(path, fmt.Sprintf("%d subsets with maxReplicas", withMax),
				"at least one subset must leave maxReplicas unset, to take the replicas the others cannot"))
		}
		if sumMin > sumMax {
			errs = append(errs, field.Invalid(path, sumMin, fmt.Sprintf("the subsets' minReplicas add up to more than their maxReplicas (%d)", sumMax)))
		}
	case spec.Replicas != nil:
		if sum > int64(total) && total >= 0 {
			errs = append(errs, field.Invalid(path, sum, fmt.Sprintf("the subsets' replicas add up to more than spec.replicas (%d)", total)))
		} else if total >= 0 && withReplicas > 0 && withReplicas == len(subsets) && sum != int64(total) {
			errs = append(errs, field.Invalid(path, sum, fmt.Sprintf("every subset sets replicas, so they must add up to spec.replicas (%d)", total)))
		}
	case withReplicas != len(subsets):
		errs = append(errs, field.Required(udSpecPath.Child("replicas"), "without spec.replicas, every subset must set replicas"))
	}
	return errs
}
