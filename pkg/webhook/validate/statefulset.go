package validate

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/workload/ordinals"
)

const (
	// StatefulSetPath is where the Advanced StatefulSet webhook is served:
	// OpenKruise's path.
	StatefulSetPath = "/validate-apps-kruise-io-statefulset"
	// StatefulSetWebhookName names it in the webhook server's metrics and logs.
	StatefulSetWebhookName = "statefulset-validate"
)

// StatefulSetWebhook refuses an Advanced StatefulSet, at CREATE and UPDATE,
// that the CRD schema cannot check and kruise could not run: see
// docs/api.md, "Advanced StatefulSet". It reads nothing from the API server.
// An InPlaceOnly template change is held to rules.
func StatefulSetWebhook(rules InPlaceRules) server.Webhook {
	w := workload[appsv1beta1.StatefulSet]{
		kind: "StatefulSet", resource: "statefulsets",
		decode: hubDecoder(appsv1alpha1.StatefulSetToV1beta1),
		meta:   func(s *appsv1beta1.StatefulSet) *metav1.ObjectMeta { return &s.ObjectMeta },
		check:  func(sts, old *appsv1beta1.StatefulSet) []problem { return checkStatefulSet(sts, old, rules) },
	}
	return server.Webhook{
		Name: StatefulSetWebhookName, Path: StatefulSetPath, Admitter: server.AdmitFunc(w.admit),
		Reasons: []string{ReasonUndecodable, ReasonForbiddenUpdate, ReasonInvalidSelector, ReasonInvalidTemplate,
			ReasonInvalidVolumeClaimTemplates, ReasonInvalidReserveOrdinals, ReasonMissingReadinessGate, ReasonNotInPlace},
	}
}

// statefulSetUpdatable are the spec fields (JSON names) an update may
// change: OpenKruise's list. The selector, serviceName and
// podManagementPolicy are fixed (also by the CRD's CEL rules).
var statefulSetUpdatable = []string{"replicas", "ordinals", "template", "reserveOrdinals", "lifecycle", "revisionHistoryLimit",
	"persistentVolumeClaimRetentionPolicy", "volumeClaimTemplates", "volumeClaimUpdateStrategy", "updateStrategy", "scaleStrategy"}

// statefulSetRules are the rules of the spec alone, in this order. What the
// CRD's CEL rules check (maxUnavailable only with Parallel, rollingUpdate
// only with RollingUpdate, the enums and ranges) is not repeated.
func statefulSetRules() []specRule[appsv1beta1.StatefulSetSpec] {
	return []specRule[appsv1beta1.StatefulSetSpec]{
		{ReasonInvalidSelector, func(s *appsv1beta1.StatefulSetSpec) field.ErrorList {
			return checkSelector("StatefulSet", s.Selector, &s.Template)
		}},
		{ReasonInvalidTemplate, func(s *appsv1beta1.StatefulSetSpec) field.ErrorList {
			return checkPodTemplate("StatefulSet", &s.Template)
		}},
		{ReasonInvalidVolumeClaimTemplates, func(s *appsv1beta1.StatefulSetSpec) field.ErrorList {
			return checkClaimTemplates(s.VolumeClaimTemplates, &s.Template)
		}},
		{ReasonInvalidReserveOrdinals, checkReserveOrdinals},
		{ReasonMissingReadinessGate, checkInPlaceReadinessGate},
	}
}

// checkStatefulSet returns what is wrong with sts, and with the update from
// old when old is not nil, an InPlaceOnly template change held to rules.
func checkStatefulSet(sts, old *appsv1beta1.StatefulSet, rules InPlaceRules) []problem {
	var out problems
	var oldSpec *appsv1beta1.StatefulSetSpec
	if old != nil {
		oldSpec = &old.Spec
		out.add(ReasonForbiddenUpdate, checkFixedFields(oldSpec, &sts.Spec, statefulSetUpdatable))
	}
	addSpecRules(&out, statefulSetRules(), &sts.Spec, oldSpec)
	if old != nil && inPlacePolicy(&sts.Spec) == appsv1beta1.InPlaceOnlyPodUpdateStrategyType {
		out.add(ReasonNotInPlace, checkTemplateInPlace(&old.Spec.Template, &sts.Spec.Template, rules))
	}
	return out
}

// inPlacePolicy is how a rolling update replaces pods: "" when pods are not
// rolled (OnDelete).
func inPlacePolicy(spec *appsv1beta1.StatefulSetSpec) appsv1beta1.PodUpdateStrategyType {
	u := spec.UpdateStrategy
	if u.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return ""
	}
	if u.RollingUpdate == nil || u.RollingUpdate.PodUpdatePolicy == "" {
		return appsv1beta1.RecreatePodUpdateStrategyType
	}
	return u.RollingUpdate.PodUpdatePolicy
}

// checkReserveOrdinals: every entry is an ordinal or a range "a-b" with
// a ≤ b (the schema checks only the type and the length), read as the
// controller reads it.
func checkReserveOrdinals(spec *appsv1beta1.StatefulSetSpec) field.ErrorList {
	var errs field.ErrorList
	for i, e := range spec.ReserveOrdinals {
		if _, err := ordinals.ParseEntry(e); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "reserveOrdinals").Index(i), e.String(), err.Error()))
		}
	}
	return errs
}

// checkInPlaceReadinessGate: pods updated in place need the InPlaceUpdateReady
// readiness gate, which keeps them out of their Services while their
// containers restart. An Advanced StatefulSet does not add it to the
// template (OpenKruise refuses the same, so a manifest it accepts is
// accepted here).
func checkInPlaceReadinessGate(spec *appsv1beta1.StatefulSetSpec) field.ErrorList {
	policy := inPlacePolicy(spec)
	if policy != appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType && policy != appsv1beta1.InPlaceOnlyPodUpdateStrategyType {
		return nil
	}
	for _, g := range spec.Template.Spec.ReadinessGates {
		if g.ConditionType == pub.InPlaceUpdateReady {
			return nil
		}
	}
	return field.ErrorList{field.Required(field.NewPath("spec", "template", "spec", "readinessGates"),
		fmt.Sprintf("podUpdatePolicy %s updates pods in place, which needs the readiness gate {conditionType: %s} in the template "+
			"to keep a pod out of its Services while its containers restart", policy, pub.InPlaceUpdateReady))}
}
