package validate

import (
	"errors"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/inplace"
)

// updatableSpecFields are the spec fields (JSON names) an update may change,
// OpenKruise's list; the rest of spec (the selector) is fixed at creation.
var updatableSpecFields = []string{"replicas", "template", "lifecycle", "scaleStrategy", "updateStrategy",
	"minReadySeconds", "progressDeadlineSeconds", "volumeClaimTemplates", "revisionHistoryLimit"}

// checkCloneSet returns what is wrong with cs, and with the update from old
// when old is not nil. On UPDATE a spec rule only refuses what the update
// brings: a problem the stored object had already (it was created while the
// webhook was not called, say) does not block its updates, so that its
// finalizers can still be removed and its other fields still changed.
func checkCloneSet(cs, old *appsv1beta1.CloneSet) []problem {
	var out []problem
	add := func(reason string, errs field.ErrorList) {
		if len(errs) > 0 {
			out = append(out, problem{reason: reason, errs: errs})
		}
	}
	if old != nil {
		add(ReasonForbiddenUpdate, checkUpdatedFields(&old.Spec, &cs.Spec))
	}
	for _, r := range specRules() {
		errs := r.check(&cs.Spec)
		if old != nil && len(errs) > 0 {
			errs = withoutKnown(errs, r.check(&old.Spec))
		}
		add(r.reason, errs)
	}
	if old != nil {
		add(ReasonNotInPlace, checkInPlaceOnly(&old.Spec, &cs.Spec))
	}
	return out
}

// withoutKnown is errs less those also in known.
func withoutKnown(errs, known field.ErrorList) field.ErrorList {
	had := map[string]bool{}
	for _, e := range known {
		had[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}

// checkUpdatedFields refuses a change of a spec field not in
// updatableSpecFields, naming each one changed. The fields are walked by
// reflection so that a field added to the type later is fixed unless listed.
func checkUpdatedFields(old, new *appsv1beta1.CloneSetSpec) field.ErrorList {
	vo, vn := reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem()
	var errs field.ErrorList
	for i := 0; i < vo.NumField(); i++ {
		name, _, _ := strings.Cut(vo.Type().Field(i).Tag.Get("json"), ",")
		if slices.Contains(updatableSpecFields, name) || equality.Semantic.DeepEqual(vo.Field(i).Interface(), vn.Field(i).Interface()) {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec").Child(name),
			"cannot be updated: only "+strings.Join(updatableSpecFields, ", ")+" can"))
	}
	return errs
}

// checkInPlaceOnly: when the pods are updated in place only (podUpdatePolicy
// InPlaceOnly of a RollingUpdate; OnDelete updates no pod), the template's
// spec may only change as an in-place update can apply it: container
// images, the cpu and memory of the requests and limits a container already
// sets (kruise resizes them; OpenKruise refuses it), and native sidecars'
// images. Only the pod spec is compared, as OpenKruise does: the template's
// labels and annotations may change (they are patched onto the pods).
func checkInPlaceOnly(old, new *appsv1beta1.CloneSetSpec) field.ErrorList {
	u := new.UpdateStrategy
	if u.Type == appsv1beta1.OnDeleteCloneSetUpdateStrategyType || u.RollingUpdate == nil ||
		u.RollingUpdate.PodUpdatePolicy != appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
		return nil
	}
	newTemplate := new.Template.DeepCopy()
	newTemplate.ObjectMeta = old.Template.ObjectMeta
	_, err := inplace.Plan(&old.Template, newTemplate, inplace.Options{Resize: true, NativeSidecarImages: true})
	var notInPlace *inplace.NotInPlaceError
	if !errors.As(err, &notInPlace) {
		return nil // in place, or both templates missing (never: they are values)
	}
	what := "changed"
	if notInPlace.Detail != "" {
		what = notInPlace.Detail
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "template").Child(notInPlace.Field),
		what+", which cannot be applied to running pods, and the update strategy is InPlaceOnly: in place, only container images, "+
			"the cpu and memory of the requests and limits a container already sets, and native sidecars' images can change "+
			"(InPlaceIfPossible or ReCreate would recreate the pods instead)")}
}
