package validate

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// The rules every workload's spec shares and the schema cannot check: the
// template and the claim templates are schemaless, and a label selector's
// syntax is not in its schema. The pod template gets light checks only
// (Kubernetes' full pod validation is not a dependency of kruise): what a
// workload could never create a pod from, or whose pods could never run as
// a workload's. kind names the workload in the messages.

// checkSelector: required, not empty (it would select every pod of the
// namespace), well formed, and matching the template's labels (else the
// workload would not own the pods it creates, and create more forever).
func checkSelector(kind string, sel *metav1.LabelSelector, template *corev1.PodTemplateSpec) field.ErrorList {
	path := field.NewPath("spec", "selector")
	if sel == nil {
		return field.ErrorList{field.Required(path, fmt.Sprintf("a %s finds its pods by this label selector", kind))}
	}
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		return field.ErrorList{field.Invalid(path, metav1.FormatLabelSelector(sel),
			"empty: it would select every pod of the namespace")}
	}
	if errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path); len(errs) > 0 {
		return errs
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return field.ErrorList{field.Invalid(path, sel, err.Error())}
	}
	if !s.Matches(labels.Set(template.Labels)) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), labels.Set(template.Labels).String(),
			fmt.Sprintf("does not match the selector %q: the %s would not own the pods it creates", s.String(), kind))}
	}
	return nil
}

// checkPodTemplate: the pods restart their containers always and run until
// replaced; they have at least one container; every container has a unique
// DNS-label name and an image.
func checkPodTemplate(kind string, template *corev1.PodTemplateSpec) field.ErrorList {
	path := field.NewPath("spec", "template", "spec")
	pod := &template.Spec
	var errs field.ErrorList
	if pod.RestartPolicy != "" && pod.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), pod.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if pod.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(path.Child("activeDeadlineSeconds"),
			fmt.Sprintf("a %s's pods run until they are replaced; a deadline would fail them", kind)))
	}
	return append(errs, checkContainers(path, pod)...)
}

// checkContainers: the pod has at least one container; every container has a unique DNS-label
// name and an image.
func checkContainers(path *field.Path, pod *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
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

// checkClaimTemplates: each claim is mounted as the pod volume of its name,
// so the names are unique DNS labels and no template volume has one.
func checkClaimTemplates(claims []corev1.PersistentVolumeClaim, template *corev1.PodTemplateSpec) field.ErrorList {
	volumes := map[string]bool{}
	for _, v := range template.Spec.Volumes {
		volumes[v.Name] = true
	}
	seen := map[string]bool{}
	var errs field.ErrorList
	for i := range claims {
		name := claims[i].Name
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

// checkFixedFields refuses a change, from old to new (pointers to the same
// spec struct), of a field not in updatable (JSON names), naming each one
// changed. The fields are walked by reflection so that a field added to the
// type later is fixed unless listed.
func checkFixedFields(old, new any, updatable []string) field.ErrorList {
	vo, vn := reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem()
	var errs field.ErrorList
	for i := 0; i < vo.NumField(); i++ {
		name, _, _ := strings.Cut(vo.Type().Field(i).Tag.Get("json"), ",")
		if slices.Contains(updatable, name) || equality.Semantic.DeepEqual(vo.Field(i).Interface(), vn.Field(i).Interface()) {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec").Child(name),
			"cannot be updated: only "+strings.Join(updatable, ", ")+" can"))
	}
	return errs
}

// InPlaceRules are the in-place rules the CloneSet and StatefulSet webhooks
// hold an InPlaceOnly template change to.
type InPlaceRules struct {
	// Resize admits changes of the cpu and memory of the requests and limits a
	// container already sets (kruise resizes them; gate
	// InPlaceWorkloadVerticalScaling). Off, they are refused as OpenKruise
	// refuses them.
	Resize bool
}

// checkTemplateInPlace: when the pods are updated in place only
// (podUpdatePolicy InPlaceOnly), the template's spec may only change as an
// in-place update can apply it: container images, the cpu and memory of the
// requests and limits a container already sets when rules.Resize (kruise
// resizes them; OpenKruise refuses it), and native sidecars' images. Only the
// pod spec is compared, as OpenKruise does: the template's labels and
// annotations may change (they are patched onto the pods).
func checkTemplateInPlace(old, new *corev1.PodTemplateSpec, rules InPlaceRules) field.ErrorList {
	newTemplate := new.DeepCopy()
	newTemplate.ObjectMeta = old.ObjectMeta
	_, err := inplace.Plan(old, newTemplate, inplace.Options{Resize: rules.Resize, NativeSidecarImages: true})
	var notInPlace *inplace.NotInPlaceError
	if !errors.As(err, &notInPlace) {
		return nil // in place
	}
	what := "changed"
	if notInPlace.Detail != "" {
		what = notInPlace.Detail
	}
	can := "container images, the cpu and memory of the requests and limits a container already sets, and native sidecars' images"
	if !rules.Resize {
		can = "container images and native sidecars' images (cpu and memory too with gate InPlaceWorkloadVerticalScaling)"
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "template").Child(notInPlace.Field),
		what+", which cannot be applied to running pods, and the update strategy is InPlaceOnly: in place, only "+can+
			" can change (InPlaceIfPossible or ReCreate would recreate the pods instead)")}
}
