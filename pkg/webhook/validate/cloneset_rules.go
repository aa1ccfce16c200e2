package validate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The rules of a CloneSet's spec the schema cannot check: the template and
// the claim templates are schemaless, and a label selector's syntax is not
// in its schema. What the CRD's CEL rules check (immutable selector, the
// int-or-string fields, progressDeadlineSeconds, maxSurge with InPlaceOnly,
// ...) is not repeated. The pod template gets light checks only (Kubernetes'
// full pod validation is not a dependency of kruise): what a CloneSet could
// never create a pod from, or whose pods could never run as a CloneSet's.

// problem is what one rule found, with the reason a refusal is counted under.
type problem struct {
	reason string
	errs   field.ErrorList
}

// specRule is a rule of the spec alone, checked at CREATE and UPDATE.
type specRule struct {
	reason string
	check  func(*appsv1beta1.CloneSetSpec) field.ErrorList
}

// specRules are checked in this order; a refusal's reason is the first
// rule's that found something.
func specRules() []specRule {
	return []specRule{
		{ReasonInvalidSelector, checkSelector},
		{ReasonInvalidTemplate, checkTemplate},
		{ReasonInvalidVolumeClaimTemplates, checkVolumeClaimTemplates},
		{ReasonDuplicatePodsToDelete, checkPodsToDelete},
	}
}

// checkSelector: required, not empty (it would select every pod of the
// namespace), well formed, and matching the template's labels (else the
// CloneSet would not own the pods it creates, and create more forever).
func checkSelector(spec *appsv1beta1.CloneSetSpec) field.ErrorList {
	path := field.NewPath("spec", "selector")
	if spec.Selector == nil {
		return field.ErrorList{field.Required(path, "a CloneSet finds its pods by this label selector")}
	}
	if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		return field.ErrorList{field.Invalid(path, metav1.FormatLabelSelector(spec.Selector),
			"empty: it would select every pod of the namespace")}
	}
	if errs := metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, path); len(errs) > 0 {
		return errs
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		return field.ErrorList{field.Invalid(path, spec.Selector, err.Error())}
	}
	if !sel.Matches(labels.Set(spec.Template.Labels)) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), labels.Set(spec.Template.Labels).String(),
			fmt.Sprintf("does not match the selector %q: the CloneSet would not own the pods it creates", sel.String()))}
	}
	return nil
}

// checkTemplate: the pods restart their containers always and run until
// replaced; they have at least one container; every container has a unique
// DNS-label name and an image.
func checkTemplate(spec *appsv1beta1.CloneSetSpec) field.ErrorList {
	path := field.NewPath("spec", "template", "spec")
	pod := &spec.Template.Spec
	var errs field.ErrorList
	if pod.RestartPolicy != "" && pod.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), pod.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if pod.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(path.Child("activeDeadlineSeconds"),
			"a CloneSet's pods run until they are replaced; a deadline would fail them"))
	}
	if len(pod.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	// Names are unique across init and regular containers, as in a pod.
	seen := map[string]bool{}
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", pod.InitContainers}, {"containers", pod.Containers}} {
		for i := range list.containers {
			c := &list.containers[i]
			cpath := path.Child(list.name).Index(i)
			errs = append(errs, checkName(cpath.Child("name"), c.Name, seen)...)
			if c.Image == "" {
				errs = append(errs, field.Required(cpath.Child("image"), "the pod could not start the container"))
			}
		}
	}
	return errs
}

// checkVolumeClaimTemplates: each claim is mounted as the pod volume of its
// name, so the names are unique DNS labels and no template volume has one.
func checkVolumeClaimTemplates(spec *appsv1beta1.CloneSetSpec) field.ErrorList {
	volumes := map[string]bool{}
	for _, v := range spec.Template.Spec.Volumes {
		volumes[v.Name] = true
	}
	seen := map[string]bool{}
	var errs field.ErrorList
	for i := range spec.VolumeClaimTemplates {
		name := spec.VolumeClaimTemplates[i].Name
		path := field.NewPath("spec", "volumeClaimTemplates").Index(i).Child("metadata", "name")
		if nameErrs := checkName(path, name, seen); len(nameErrs) > 0 {
			errs = append(errs, nameErrs...)
			continue
		}
		if volumes[name] {
			errs = append(errs, field.Invalid(path, name,
				"the template has a volume of this name, and each claim is mounted as the volume of its own name"))
		}
	}
	return errs
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

// checkName checks a name that must be a DNS label unique among seen, and
// adds it to seen.
func checkName(path *field.Path, name string, seen map[string]bool) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(path, "")}
	case seen[name]:
		return field.ErrorList{field.Duplicate(path, name)}
	}
	seen[name] = true
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, name, strings.Join(msgs, "; "))}
	}
	return nil
}
