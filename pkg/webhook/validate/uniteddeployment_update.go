package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// checkUDPatches: each subset's patch is a strategic-merge patch of the pod template (as the
// controller applies it to the subset workload's template) that merges, and leaves a pod
// template that decodes and that a workload can run (checkPodTemplate). A patch that fails
// here would fail every attempt to make the subset's workload.
func checkUDPatches(spec *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	all := udTemplates(&spec.Template)
	if len(all) != 1 {
		return nil // checkUDTemplate refuses it
	}
	t := all[0]
	base, err := json.Marshal(t.pod)
	if err != nil {
		return field.ErrorList{field.InternalError(udSpecPath.Child("template"), err)}
	}
	var errs field.ErrorList
	for i := range spec.Topology.Subsets {
		patch := spec.Topology.Subsets[i].Patch.Raw
		if len(patch) == 0 || string(patch) == "null" {
			continue
		}
		path := udSpecPath.Child("topology", "subsets").Index(i).Child("patch")
		if !json.Valid(patch) || !strings.HasPrefix(strings.TrimSpace(string(patch)), "{") {
			errs = append(errs, field.Invalid(path, string(patch), "must be a JSON object: a strategic-merge patch of the pod template"))
			continue
		}
		merged, err := strategicpatch.StrategicMergePatch(base, patch, &corev1.PodTemplateSpec{})
		if err != nil {
			errs = append(errs, field.Invalid(path, string(patch), fmt.Sprintf("does not merge into %s.spec.template: %v", t.path, err)))
			continue
		}
		out := &corev1.PodTemplateSpec{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(merged, out); err != nil {
			errs = append(errs, field.Invalid(path, string(patch), fmt.Sprintf("makes a pod template that does not decode: %v", err)))
			continue
		}
		errs = append(errs, rebase(checkPodTemplate(t.kind, out), "spec.template", path.String()+"(merged)")...)
	}
	return errs
}

// checkUDPartitions: manualUpdate.partitions names only subsets of the topology.
func checkUDPartitions(spec *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	mu := spec.UpdateStrategy.ManualUpdate
	if mu == nil {
		return nil
	}
	names := map[string]bool{}
	for _, s := range spec.Topology.Subsets {
		names[s.Name] = true
	}
	var unknown []string
	for name := range mu.Partitions {
		if !names[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	var errs field.ErrorList
	for _, name := range unknown {
		errs = append(errs, field.NotFound(udSpecPath.Child("updateStrategy", "manualUpdate", "partitions").Key(name), "no subset of this name in spec.topology.subsets"))
	}
	return errs
}

// statefulSetTemplateUpdatable are the fields of a StatefulSet or Advanced StatefulSet template's
// spec an update may change (OpenKruise's list): the subset workloads' other fields are fixed
// once made.
var statefulSetTemplateUpdatable = []string{"replicas", "template", "updateStrategy"}

// checkUDUpdate: a subset keeps its nodeSelectorTerm and tolerations (OpenKruise's rule); a
// StatefulSet or Advanced StatefulSet template keeps its spec but for replicas, template and
// updateStrategy. The selector may change, as in OpenKruise: the controller then recreates the
// subset workloads, whose selectors are immutable (docs/uniteddeployment.md).
func checkUDUpdate(spec, old *appsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	var errs field.ErrorList
	oldSubsets := map[string]*appsv1alpha1.Subset{}
	for i := range old.Topology.Subsets {
		oldSubsets[old.Topology.Subsets[i].Name] = &old.Topology.Subsets[i]
	}
	for i := range spec.Topology.Subsets {
		s := &spec.Topology.Subsets[i]
		o, ok := oldSubsets[s.Name]
		if !ok {
			continue
		}
		p := udSpecPath.Child("topology", "subsets").Index(i)
		if !equality.Semantic.DeepEqual(s.NodeSelectorTerm, o.NodeSelectorTerm) {
			errs = append(errs, field.Forbidden(p.Child("nodeSelectorTerm"),
				"cannot be updated: a subset keeps its nodes; add a subset of another name instead"))
		}
		if !equality.Semantic.DeepEqual(s.Tolerations, o.Tolerations) {
			errs = append(errs, field.Forbidden(p.Child("tolerations"),
				"cannot be updated: a subset keeps its tolerations; add a subset of another name instead"))
		}
	}
	path := udSpecPath.Child("template")
	if n, o := spec.Template.StatefulSetTemplate, old.Template.StatefulSetTemplate; n != nil && o != nil {
		errs = append(errs, rebase(checkFixedFields(&o.Spec, &n.Spec, statefulSetTemplateUpdatable),
			"spec", path.Child("statefulSetTemplate", "spec").String())...)
	}
	if n, o := spec.Template.AdvancedStatefulSetTemplate, old.Template.AdvancedStatefulSetTemplate; n != nil && o != nil {
		errs = append(errs, rebase(checkFixedFields(&o.Spec, &n.Spec, statefulSetTemplateUpdatable),
			"spec", path.Child("advancedStatefulSetTemplate", "spec").String())...)
	}
	return errs
}
