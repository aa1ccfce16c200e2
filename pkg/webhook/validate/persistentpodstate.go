package validate

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	ppsclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// PersistentPodStatePath is where the PersistentPodState webhook is served: OpenKruise's path.
	PersistentPodStatePath = "/validate-apps-kruise-io-persistentpodstate"
	// PersistentPodStateWebhookName names it in the webhook server's metrics and logs.
	PersistentPodStateWebhookName = "persistentpodstate-validate"

	// ReasonNoTopology: neither requiredPersistentTopology nor preferredPersistentTopology.
	ReasonNoTopology = "NoPersistentTopology"
	// ReasonPersistentPodStateConflict: another PersistentPodState of the namespace targets the
	// same workload.
	ReasonPersistentPodStateConflict = "PersistentPodStateConflict"
)

// PersistentPodStateWebhook refuses, at CREATE and UPDATE, what OpenKruise v1.9.0 refuses and
// nothing more: a targetRef without apiVersion, kind or name, or not a StatefulSet of apps or
// apps.kruise.io (OpenKruise's kruise-configuration allow-list of custom workloads is not
// supported); neither topology; a changed targetRef; a second PersistentPodState of the same
// workload (group, kind, name; listed at each CREATE). A preferred term whose weight is outside
// 1..100 is admitted, as OpenKruise does, with a warning: the pod webhook skips it (the API
// server would refuse a pod with it).
func PersistentPodStateWebhook(states ppsclient.PersistentPodStatesGetter) server.Webhook {
	v := &ppsValidator{states: states}
	return server.Webhook{Name: PersistentPodStateWebhookName, Path: PersistentPodStatePath, Admitter: server.AdmitFunc(v.admit),
		Reasons: []string{ReasonUndecodable, ReasonInvalidTargetRef, ReasonNoTopology, ReasonForbiddenUpdate, ReasonPersistentPodStateConflict}}
}

type ppsValidator struct {
	states ppsclient.PersistentPodStatesGetter
}

func (v *ppsValidator) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != group || req.Resource.Resource != "persistentpodstates" {
		return server.Allowed()
	}
	pps := &appsv1alpha1.PersistentPodState{}
	if err := json.Unmarshal(req.Object.Raw, pps); err != nil {
		var named struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &named)
		return invalid(ReasonUndecodable, "PersistentPodState", &named.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{},
			fmt.Sprintf("does not read as a PersistentPodState: %v", err))})
	}
	if pps.Namespace == "" {
		pps.Namespace = req.Namespace
	}
	if reason, errs := CheckPersistentPodState(&pps.Spec); len(errs) > 0 {
		return invalid(reason, "PersistentPodState", &pps.ObjectMeta, errs)
	}
	if req.Operation == admissionv1.Update {
		old := &appsv1alpha1.PersistentPodState{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			klog.FromContext(ctx).Error(err, "Checking a PersistentPodState update without the stored object, which does not decode")
		} else if !apiequality.Semantic.DeepEqual(old.Spec.TargetReference, pps.Spec.TargetReference) {
			return invalid(ReasonForbiddenUpdate, "PersistentPodState", &pps.ObjectMeta, field.ErrorList{
				field.Forbidden(field.NewPath("spec", "targetRef"), "targetRef cannot be changed")})
		}
	} else {
		list, err := v.states.PersistentPodStates(pps.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return unchecked(ctx, "the PersistentPodState against the others of its namespace", err)
		}
		if errs := ppsConflict(pps, list.Items); len(errs) > 0 {
			return invalid(ReasonPersistentPodStateConflict, "PersistentPodState", &pps.ObjectMeta, errs)
		}
	}
	return server.Allowed(ppsWarnings(&pps.Spec)...)
}

// CheckPersistentPodState is OpenKruise's check of a spec: the reason and the errors, none when
// it passes.
func CheckPersistentPodState(spec *appsv1alpha1.PersistentPodStateSpec) (string, field.ErrorList) {
	ref := spec.TargetReference
	path := field.NewPath("spec", "targetRef")
	if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
		return ReasonInvalidTargetRef, field.ErrorList{field.Required(path, "apiVersion, kind and name are required")}
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.Kind != "StatefulSet" || (gv.Group != "apps" && gv.Group != group) {
		return ReasonInvalidTargetRef, field.ErrorList{field.NotSupported(path.Child("kind"), ref.APIVersion+" "+ref.Kind,
			[]string{"apps/v1 StatefulSet", "apps.kruise.io/v1beta1 StatefulSet", "apps.kruise.io/v1alpha1 StatefulSet"})}
	}
	if spec.RequiredPersistentTopology == nil && len(spec.PreferredPersistentTopology) == 0 {
		return ReasonNoTopology, field.ErrorList{field.Required(field.NewPath("spec", "requiredPersistentTopology"),
			"requiredPersistentTopology or preferredPersistentTopology is required")}
	}
	return "", nil
}

// ppsConflict refuses a second PersistentPodState of one workload (group, kind and name).
func ppsConflict(pps *appsv1alpha1.PersistentPodState, others []appsv1alpha1.PersistentPodState) field.ErrorList {
	ref := pps.Spec.TargetReference
	g, _ := schema.ParseGroupVersion(ref.APIVersion)
	for _, o := range others {
		r := o.Spec.TargetReference
		if o.Name == pps.Name {
			continue
		}
		og, _ := schema.ParseGroupVersion(r.APIVersion)
		if og.Group == g.Group && r.Kind == ref.Kind && r.Name == ref.Name {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "targetRef"), ref.Kind+"/"+ref.Name,
				fmt.Sprintf("PersistentPodState %s targets it already: a workload has one PersistentPodState", o.Name))}
		}
	}
	return nil
}

// ppsWarnings are what the pod webhook will ignore of an admitted spec.
func ppsWarnings(spec *appsv1alpha1.PersistentPodStateSpec) []string {
	var out []string
	for i, t := range spec.PreferredPersistentTopology {
		if t.Weight < 1 || t.Weight > 100 {
			out = append(out, fmt.Sprintf("spec.preferredPersistentTopology[%d].weight %d is outside 1..100: this term is never applied to pods", i, t.Weight))
		}
	}
	return out
}
