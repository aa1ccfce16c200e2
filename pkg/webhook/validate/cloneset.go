package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// CloneSetPath is where the CloneSet webhook is served: OpenKruise's
	// path for its CloneSet validating webhook.
	CloneSetPath = "/validate-apps-kruise-io-cloneset"
	// CloneSetWebhookName names it in the webhook server's metrics and logs.
	CloneSetWebhookName = "cloneset-validate"
)

// Why a CloneSet is refused (the rejection metric's reason). A refusal
// lists every problem found; its reason is that of the first, in this order.
const (
	// ReasonUndecodable: the object does not read as a CloneSet (a
	// schemaless part, the template say, has a value of the wrong type):
	// stored, it would break every client that lists CloneSets.
	ReasonUndecodable = "Undecodable"
	// ReasonForbiddenUpdate: an update changes a spec field that may not
	// change.
	ReasonForbiddenUpdate = "ForbiddenUpdate"
	// ReasonInvalidSelector: the selector is missing, empty, malformed, or
	// does not match the template's labels.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonInvalidTemplate: the pod template is not one a CloneSet can run
	// (restartPolicy, activeDeadlineSeconds, containers, their names and
	// images).
	ReasonInvalidTemplate = "InvalidTemplate"
	// ReasonInvalidVolumeClaimTemplates: a claim template's name is missing,
	// not a DNS label, repeated, or that of a template volume.
	ReasonInvalidVolumeClaimTemplates = "InvalidVolumeClaimTemplates"
	// ReasonDuplicatePodsToDelete: scaleStrategy.podsToDelete names a pod
	// twice.
	ReasonDuplicatePodsToDelete = "DuplicatePodsToDelete"
	// ReasonNotInPlace: with podUpdatePolicy InPlaceOnly, the template
	// changes in a way that cannot be applied to running pods.
	ReasonNotInPlace = "NotInPlace"
)

// CloneSetWebhook refuses a CloneSet, at CREATE and UPDATE, that the CRD
// schema cannot check (its template is schemaless) and kruise could not run:
// see docs/api.md, "CloneSet". It reads nothing from the API server.
func CloneSetWebhook() server.Webhook {
	return server.Webhook{
		Name: CloneSetWebhookName, Path: CloneSetPath, Admitter: server.AdmitFunc(admitCloneSet),
		Reasons: []string{ReasonUndecodable, ReasonForbiddenUpdate, ReasonInvalidSelector, ReasonInvalidTemplate,
			ReasonInvalidVolumeClaimTemplates, ReasonDuplicatePodsToDelete, ReasonNotInPlace},
	}
}

// admitCloneSet judges a CREATE or UPDATE of a CloneSet in either version;
// a v1alpha1 object is converted to v1beta1 first, so that one set of rules
// (and field paths) serves both.
func admitCloneSet(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) ||
		req.SubResource != "" || req.Resource.Group != group || req.Resource.Resource != "clonesets" {
		return server.Allowed()
	}
	cs, err := decodeCloneSet(req.Kind.Version, req.Object.Raw)
	switch {
	case errors.Is(err, errUnknownVersion):
		return server.Allowed()
	case err != nil:
		// The API server has checked the object against the schema, so only
		// a schemaless part can fail to decode: the object's fault, not the
		// webhook's.
		var named struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &named) // for the name only
		return invalid(ReasonUndecodable, "CloneSet", &named.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{},
			fmt.Sprintf("does not read as a CloneSet, as kruise-controller and every client would read it: %v", err))})
	}
	var old *appsv1beta1.CloneSet
	var warnings []string
	if req.Operation == admissionv1.Update {
		if old, err = decodeCloneSet(req.Kind.Version, req.OldObject.Raw); err != nil {
			// The stored object is not ours to refuse (and the update may be
			// its fix): judge the new one alone.
			klog.FromContext(ctx).Error(err, "Checking a CloneSet update without the stored object, which does not decode")
			warnings, old = []string{fmt.Sprintf("kruise could not read the stored CloneSet (%v): "+
				"the update was checked as a new CloneSet, without the rules of updates", err)}, nil
		}
	}
	problems := checkCloneSet(cs, old)
	if len(problems) == 0 {
		return server.Allowed(warnings...)
	}
	var errs field.ErrorList
	for _, p := range problems {
		errs = append(errs, p.errs...)
	}
	res := invalid(problems[0].reason, "CloneSet", &cs.ObjectMeta, errs)
	res.Warnings = warnings
	return res
}

// errUnknownVersion is a request of a version the webhook does not know,
// which a configuration should not send: admitted.
var errUnknownVersion = errors.New("unknown CloneSet version")

// decodeCloneSet reads raw, of version, as a v1beta1 CloneSet. It reads as
// client-go does (field names case-sensitive), so that what is judged is
// what kruise-controller will read.
func decodeCloneSet(version string, raw []byte) (*appsv1beta1.CloneSet, error) {
	switch version {
	case appsv1beta1.SchemeGroupVersion.Version:
		cs := &appsv1beta1.CloneSet{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, cs); err != nil {
			return nil, err
		}
		return cs, nil
	case appsv1alpha1.SchemeGroupVersion.Version:
		cs := &appsv1alpha1.CloneSet{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, cs); err != nil {
			return nil, err
		}
		return appsv1alpha1.CloneSetToV1beta1(cs), nil
	}
	return nil, errUnknownVersion
}
