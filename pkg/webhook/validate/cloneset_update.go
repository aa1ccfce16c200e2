package validate

import (
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// cloneSetUpdatable are the spec fields (JSON names) an update may change,
// OpenKruise's list; the rest of spec (the selector) is fixed at creation.
var cloneSetUpdatable = []string{"replicas", "template", "lifecycle", "scaleStrategy", "updateStrategy",
	"minReadySeconds", "progressDeadlineSeconds", "volumeClaimTemplates", "revisionHistoryLimit"}

// checkCloneSet returns what is wrong with cs, and with the update from old
// when old is not nil, an InPlaceOnly template change held to rules.
func checkCloneSet(cs, old *appsv1beta1.CloneSet, rules InPlaceRules) []problem {
	var out problems
	if old != nil {
		out.add(ReasonForbiddenUpdate, checkFixedFields(&old.Spec, &cs.Spec, cloneSetUpdatable))
	}
	var oldSpec *appsv1beta1.CloneSetSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	addSpecRules(&out, cloneSetRules(), &cs.Spec, oldSpec)
	// In place only (InPlaceOnly of a RollingUpdate; OnDelete updates no pod).
	u := cs.Spec.UpdateStrategy
	if old != nil && u.Type != appsv1beta1.OnDeleteCloneSetUpdateStrategyType && u.RollingUpdate != nil &&
		u.RollingUpdate.PodUpdatePolicy == appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
		out.add(ReasonNotInPlace, checkTemplateInPlace(&old.Spec.Template, &cs.Spec.Template, rules))
	}
	return out
}
