package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	wsclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// WorkloadSpreadPath is where the WorkloadSpread webhook is served: OpenKruise's path.
	WorkloadSpreadPath = "/validate-apps-kruise-io-v1alpha1-workloadspread"
	// WorkloadSpreadWebhookName names it in the webhook server's metrics and logs.
	WorkloadSpreadWebhookName = "workloadspread-validate"
)

// Why a WorkloadSpread is refused (beside ReasonUndecodable, ReasonInvalidTargetRef,
// ReasonInvalidSelector and ReasonForbiddenUpdate).
const (
	// ReasonWorkloadSpreadDisabled: gate WorkloadSpread is off, so nothing would spread the pods.
	ReasonWorkloadSpreadDisabled = "WorkloadSpreadDisabled"
	// ReasonInvalidSubsets: no subset, a duplicate or empty name, a term, toleration, patch or
	// maxReplicas kruise cannot use.
	ReasonInvalidSubsets = "InvalidSubsets"
	// ReasonInvalidScheduleStrategy: an unknown type, or Adaptive settings that could move a pod
	// among unschedulable subsets for ever.
	ReasonInvalidScheduleStrategy = "InvalidScheduleStrategy"
	// ReasonSpreadConflict: another WorkloadSpread of the namespace targets the same workload.
	ReasonSpreadConflict = "WorkloadSpreadConflict"
)

// SpreadScope routes the pod webhooks to the pods of a spread's target before it is stored
// (spreadscope.Includer).
type SpreadScope interface {
	Include(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) error
}

// SpreadTargets reads a spread's target, any kind; nil without error when it does not exist
// (spreadinjection.DynamicTargets).
type SpreadTargets interface {
	Get(ctx context.Context, namespace string, ref appsv1alpha1.TargetReference) (*unstructured.Unstructured, error)
}

// WorkloadSpreadWebhook refuses, at CREATE and UPDATE, a WorkloadSpread kruise would not spread
// as written (checkSpread; OpenKruise v1.9.0's checks, never stricter), a change of its target,
// and at CREATE a second spread of the same workload (listed at each request). enabled is gate
// WorkloadSpread: off, every spread is refused, as in OpenKruise. targets, when set, reads the
// target so that each subset's patch is tried on its pod template. scope, when set, routes the
// target's pods to the pod webhooks before a new spread is admitted (not in a dry run); its
// failure admits the spread with a warning.
func WorkloadSpreadWebhook(spreads wsclient.WorkloadSpreadsGetter, enabled bool, targets SpreadTargets, scope SpreadScope) server.Webhook {
	v := &spreadValidator{spreads: spreads, enabled: enabled, targets: targets, scope: scope}
	return server.Webhook{
		Name: WorkloadSpreadWebhookName, Path: WorkloadSpreadPath, Admitter: server.AdmitFunc(v.admit),
		Reasons: []string{ReasonWorkloadSpreadDisabled, ReasonUndecodable, ReasonInvalidTargetRef, ReasonInvalidSubsets,
			ReasonInvalidScheduleStrategy, ReasonInvalidSelector, ReasonForbiddenUpdate, ReasonSpreadConflict},
	}
}

type spreadValidator struct {
	spreads wsclient.WorkloadSpreadsGetter
	enabled bool
	targets SpreadTargets
	scope   SpreadScope
}

func (v *spreadValidator) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != group || req.Resource.Resource != "workloadspreads" {
		return server.Allowed()
	}
	if !v.enabled {
		return server.Result{Reason: ReasonWorkloadSpreadDisabled, Code: http.StatusForbidden,
			Message: "WorkloadSpreads are off in this kruise: turn on feature gate WorkloadSpread"}
	}
	ws := &appsv1alpha1.WorkloadSpread{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.Object.Raw, ws); err != nil {
		var named struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &named)
		return invalid(ReasonUndecodable, "WorkloadSpread", &named.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{},
			fmt.Sprintf("does not read as a WorkloadSpread: %v", err))})
	}
	if ws.Namespace == "" {
		ws.Namespace = req.Namespace
	}
	var old *appsv1alpha1.WorkloadSpread
	if req.Operation == admissionv1.Update {
		old = &appsv1alpha1.WorkloadSpread{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.OldObject.Raw, old); err != nil {
			klog.FromContext(ctx).Error(err, "Checking a WorkloadSpread update without the stored object, which does not decode")
			old = nil
		}
	}
	var template *templateOf
	if v.targets != nil && ws.Spec.TargetReference != nil && hasPatch(ws) {
		tctx, cancel := WithAnswerMargin(ctx)
		obj, err := v.targets.Get(tctx, ws.Namespace, *ws.Spec.TargetReference)
		cancel()
		if err != nil {
			// Not refused for kruise's own failure: the patch is tried at each pod's create too.
			klog.FromContext(ctx).Error(err, "Checking a WorkloadSpread's patches without its target", "workloadSpread", klog.KObj(ws))
		} else if obj != nil {
			template = podTemplateOf(obj)
		}
	}
	found := checkSpread(ws, old, template)
	if len(found) == 0 && req.Operation == admissionv1.Create && ws.Spec.TargetReference != nil {
		list, err := v.spreads.WorkloadSpreads(ws.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return unchecked(ctx, "the WorkloadSpread against the other spreads of its namespace", err)
		}
		found.add(ReasonSpreadConflict, spreadConflict(ws, list.Items))
	}
	if len(found) > 0 {
		var errs field.ErrorList
		for _, p := range found {
			errs = append(errs, p.errs...)
		}
		return invalid(found[0].reason, "WorkloadSpread", &ws.ObjectMeta, errs)
	}
	if v.scope == nil || req.Operation != admissionv1.Create || (req.DryRun != nil && *req.DryRun) {
		return server.Allowed()
	}
	ctx, cancel := WithAnswerMargin(ctx)
	defer cancel()
	if err := v.scope.Include(ctx, ws); err != nil {
		klog.FromContext(ctx).Error(err, "Admitting a WorkloadSpread the pod webhooks may not be called for yet", "workloadSpread", klog.KObj(ws))
		return server.Allowed(fmt.Sprintf("kruise could not route its pod webhooks to the pods of WorkloadSpread %s's target before admitting it (%v): "+
			"pods created before kruise-controller's leader routes them, within seconds, are not spread", ws.Name, err))
	}
	return server.Allowed()
}

// spreadConflict refuses a second spread of one workload (group, kind and name; any version).
func spreadConflict(ws *appsv1alpha1.WorkloadSpread, others []appsv1alpha1.WorkloadSpread) field.ErrorList {
	ref := ws.Spec.TargetReference
	g, _ := schema.ParseGroupVersion(ref.APIVersion)
	for _, o := range others {
		r := o.Spec.TargetReference
		if o.Name == ws.Name || r == nil {
			continue
		}
		og, _ := schema.ParseGroupVersion(r.APIVersion)
		if og.Group == g.Group && r.Kind == ref.Kind && r.Name == ref.Name {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "targetRef"), ref.Kind+"/"+ref.Name,
				fmt.Sprintf("WorkloadSpread %s targets it already: a workload is spread by one WorkloadSpread", o.Name))}
		}
	}
	return nil
}
