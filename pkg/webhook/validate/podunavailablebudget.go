package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	pubclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// PodUnavailableBudgetPath is where the budget's webhook is served: OpenKruise's path.
	PodUnavailableBudgetPath = "/validate-policy-kruise-io-podunavailablebudget"
	// PodUnavailableBudgetWebhookName names it in the webhook server's metrics and logs.
	PodUnavailableBudgetWebhookName = "podunavailablebudget-validate"
)

// Why a PodUnavailableBudget is refused (beside ReasonUndecodable, ReasonInvalidSelector and
// ReasonForbiddenUpdate).
const (
	// ReasonBudgetDisabled: both PodUnavailableBudget gates are off, so nothing would enforce it.
	ReasonBudgetDisabled = "PodUnavailableBudgetDisabled"
	// ReasonInvalidBudgetAnnotation: kruise.io/pub-protect-operations, pub.kruise.io/
	// protect-total-replicas, protect-unready-pods or budget-per-workload has a value kruise
	// does not read.
	ReasonInvalidBudgetAnnotation = "InvalidAnnotation"
	// ReasonInvalidTargetRef: targetRef lacks its apiVersion, kind or name, or the apiVersion
	// does not parse.
	ReasonInvalidTargetRef = "InvalidTargetRef"
	// ReasonInvalidBudgetCount: maxUnavailable or minAvailable is missing, both, negative, or a
	// percentage above 100%.
	ReasonInvalidBudgetCount = "InvalidBudgetCount"
	// ReasonBudgetConflict: another budget of the namespace covers the same workload, or has a
	// selector that overlaps.
	ReasonBudgetConflict = "BudgetConflict"
)

const policyGroup = "policy.kruise.io"

// BudgetScope routes the pod webhooks to the pods of a budget before it is stored
// (pubscope.Includer).
type BudgetScope interface {
	Include(ctx context.Context, pub *policyv1alpha1.PodUnavailableBudget) error
}

// PodUnavailableBudgetWebhook refuses, at CREATE and UPDATE, a PodUnavailableBudget kruise would
// not enforce as written: see checkBudget, and another budget of the namespace covering the same
// pods (listed with budgets at each request). enabled is whether a PodUnavailableBudget gate is
// on: with both off every budget is refused, as in OpenKruise. scope, when not nil, routes the
// pods to the disruption webhooks before a new budget is admitted (not in a dry run); its
// failure admits the budget with a warning.
func PodUnavailableBudgetWebhook(budgets pubclient.PodUnavailableBudgetsGetter, enabled bool, scope BudgetScope) server.Webhook {
	v := &budgetValidator{budgets: budgets, enabled: enabled, scope: scope}
	return server.Webhook{
		Name: PodUnavailableBudgetWebhookName, Path: PodUnavailableBudgetPath, Admitter: server.AdmitFunc(v.admit),
		Reasons: []string{ReasonBudgetDisabled, ReasonUndecodable, ReasonInvalidBudgetAnnotation, ReasonInvalidSelector,
			ReasonInvalidTargetRef, ReasonInvalidBudgetCount, ReasonForbiddenUpdate, ReasonBudgetConflict},
	}
}

type budgetValidator struct {
	budgets pubclient.PodUnavailableBudgetsGetter
	enabled bool
	scope   BudgetScope
}

func (v *budgetValidator) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != policyGroup || req.Resource.Resource != "podunavailablebudgets" {
		return server.Allowed()
	}
	if !v.enabled {
		return server.Result{Reason: ReasonBudgetDisabled, Code: http.StatusBadRequest,
			Message: "PodUnavailableBudgets are off in this kruise: turn on feature gate PodUnavailableBudgetDeleteGate or PodUnavailableBudgetUpdateGate"}
	}
	pub := &policyv1alpha1.PodUnavailableBudget{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.Object.Raw, pub); err != nil {
		var named struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &named)
		return invalidBudget(ReasonUndecodable, &named.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{},
			fmt.Sprintf("does not read as a PodUnavailableBudget: %v", err))})
	}
	if pub.Namespace == "" {
		pub.Namespace = req.Namespace
	}
	var old *policyv1alpha1.PodUnavailableBudget
	if req.Operation == admissionv1.Update {
		old = &policyv1alpha1.PodUnavailableBudget{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.OldObject.Raw, old); err != nil {
			klog.FromContext(ctx).Error(err, "Checking a PodUnavailableBudget update without the stored object, which does not decode")
			old = nil
		}
	}
	found := problems(checkBudget(pub, old))
	if len(found) == 0 {
		list, err := v.budgets.PodUnavailableBudgets(pub.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return unchecked(ctx, "the PodUnavailableBudget against the other budgets of its namespace", err)
		}
		found.add(ReasonBudgetConflict, budgetConflict(pub, list.Items))
	}
	if len(found) > 0 {
		var errs field.ErrorList
		for _, p := range found {
			errs = append(errs, p.errs...)
		}
		return invalidBudget(found[0].reason, &pub.ObjectMeta, errs)
	}
	if v.scope == nil || req.Operation != admissionv1.Create || (req.DryRun != nil && *req.DryRun) {
		return server.Allowed()
	}
	ctx, cancel := WithAnswerMargin(ctx)
	defer cancel()
	if err := v.scope.Include(ctx, pub); err != nil {
		klog.FromContext(ctx).Error(err, "Admitting a PodUnavailableBudget the pod webhooks may not be called for yet", "budget", klog.KObj(pub))
		return server.Allowed(fmt.Sprintf("kruise could not route its pod webhooks to the pods of PodUnavailableBudget %s before admitting it (%v): "+
			"they are unprotected until kruise-controller's leader routes them, within seconds", pub.Name, err))
	}
	return server.Allowed()
}

// invalidBudget refuses the budget as the API server refuses an invalid object (422).
func invalidBudget(reason string, meta *metav1.ObjectMeta, errs field.ErrorList) server.Result {
	st := apierrors.NewInvalid(schema.GroupKind{Group: policyGroup, Kind: "PodUnavailableBudget"}, displayName(meta), errs).ErrStatus
	return server.Invalid(reason, st.Message)
}
