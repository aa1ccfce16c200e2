package validate

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// DaemonSetPath is where the Advanced DaemonSet webhook is served:
	// OpenKruise's path.
	DaemonSetPath = "/validate-apps-kruise-io-daemonset"
	// DaemonSetWebhookName names it in the webhook server's metrics and logs.
	DaemonSetWebhookName = "daemonset-validate"
)

// DaemonSetWebhook refuses an Advanced DaemonSet, at CREATE and UPDATE, that
// the CRD schema cannot check and kruise could not run: see docs/api.md,
// "Advanced DaemonSet". It reads nothing from the API server. Every spec
// field but the selector (fixed by the CRD) may change, as in the built-in
// DaemonSet.
func DaemonSetWebhook() server.Webhook {
	w := workload[appsv1beta1.DaemonSet]{
		kind: "DaemonSet", resource: "daemonsets",
		decode: hubDecoder(appsv1alpha1.DaemonSetToV1beta1),
		meta:   func(ds *appsv1beta1.DaemonSet) *metav1.ObjectMeta { return &ds.ObjectMeta },
		check:  checkDaemonSet,
	}
	return server.Webhook{
		Name: DaemonSetWebhookName, Path: DaemonSetPath, Admitter: server.AdmitFunc(w.admit),
		Reasons: []string{ReasonUndecodable, ReasonInvalidSelector, ReasonInvalidTemplate, ReasonInvalidRollingUpdate},
	}
}

// daemonSetRules are the rules of the spec, in this order. What the CRD's
// CEL rules check (exactly one of maxUnavailable and maxSurge non-zero,
// maxSurge 0 in place, the int-or-string forms, no inPlaceUpdate hook) is
// not repeated.
func daemonSetRules() []specRule[appsv1beta1.DaemonSetSpec] {
	return []specRule[appsv1beta1.DaemonSetSpec]{
		{ReasonInvalidSelector, func(s *appsv1beta1.DaemonSetSpec) field.ErrorList {
			return checkSelector("DaemonSet", s.Selector, &s.Template)
		}},
		{ReasonInvalidTemplate, func(s *appsv1beta1.DaemonSetSpec) field.ErrorList { return checkPodTemplate("DaemonSet", &s.Template) }},
		{ReasonInvalidRollingUpdate, checkDaemonSetRollingUpdate},
	}
}

// checkDaemonSet returns what is wrong with ds, and with the update from old
// when old is not nil.
func checkDaemonSet(ds, old *appsv1beta1.DaemonSet) []problem {
	var out problems
	var oldSpec *appsv1beta1.DaemonSetSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	addSpecRules(&out, daemonSetRules(), &ds.Spec, oldSpec)
	return out
}

// checkDaemonSetRollingUpdate: a percentage of maxUnavailable, maxSurge or
// partition is at most 100% (OpenKruise refuses more). The node selector is
// not checked, as OpenKruise does not: the controller answers a malformed
// one in an Event. OnDelete ignores rollingUpdate, as OpenKruise.
func checkDaemonSetRollingUpdate(spec *appsv1beta1.DaemonSetSpec) field.ErrorList {
	u := spec.UpdateStrategy
	if u.Type == appsv1beta1.OnDeleteDaemonSetStrategyType || u.RollingUpdate == nil {
		return nil
	}
	path := field.NewPath("spec", "updateStrategy", "rollingUpdate")
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value *intstr.IntOrString
	}{{"maxUnavailable", u.RollingUpdate.MaxUnavailable}, {"maxSurge", u.RollingUpdate.MaxSurge}, {"partition", u.RollingUpdate.Partition}} {
		if f.value == nil || f.value.Type != intstr.String {
			continue
		}
		// The schema allows only digits and "%".
		if n, err := strconv.Atoi(strings.TrimSuffix(f.value.StrVal, "%")); err == nil && n > 100 {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value.StrVal, "must not be more than 100% of the DaemonSet's nodes"))
		}
	}
	return errs
}
