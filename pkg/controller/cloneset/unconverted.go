package cloneset

import (
	"fmt"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ReasonUnconvertedStrategy is the Event reason for a CloneSet written as v1alpha1 that the API
// server stored without conversion.
const ReasonUnconvertedStrategy = "UnconvertedStrategy"

// UnconvertedStrategy says why the CloneSet's update strategy cannot be trusted, or "" when it
// can. v1alpha1 and v1beta1 shape the strategy differently (v1alpha1's type is ReCreate,
// InPlaceIfPossible or InPlaceOnly, its partition and maxUnavailable sit beside it; v1beta1's type
// is RollingUpdate or OnDelete, with the rest under rollingUpdate). Without the conversion webhook
// (CRD conversion strategy None, e.g. webhook.enabled=false) a CloneSet written as v1alpha1 reaches
// the controller's v1beta1 view with a v1alpha1 type and without its partition, maxUnavailable and
// update policy: rolling it from that view would recreate pods meant to be updated in place, or
// update pods a partition holds back. v1alpha1's schema always defaults type, so every such
// object shows one of these three values.
func UnconvertedStrategy(cs *appsv1beta1.CloneSet) string {
	switch t := cs.Spec.UpdateStrategy.Type; t {
	case "", appsv1beta1.RollingUpdateCloneSetUpdateStrategyType, appsv1beta1.OnDeleteCloneSetUpdateStrategyType:
		return ""
	default:
		return fmt.Sprintf("spec.updateStrategy.type %q is a v1alpha1 value: the CloneSet was written as apps.kruise.io/v1alpha1 and stored without conversion "+
			"(the CRD's conversion is not kruise's webhook: install with webhook.enabled=true, or write the CloneSet as v1beta1), "+
			"so its partition, maxUnavailable and update policy are not known; no pod is updated until they are", t)
	}
}
