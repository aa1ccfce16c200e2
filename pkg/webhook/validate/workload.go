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

// workload is what admitting one workload kind (CloneSet, StatefulSet,
// DaemonSet) needs: its names, how to read it in either version as its
// v1beta1 form S, and its rules. One admit serves them all, so that they
// answer alike: a v1alpha1 object is judged as v1beta1 (one set of rules and
// field paths for both), and what does not decode is treated the same way.
type workload[S any] struct {
	kind, resource string
	decode         func(version string, raw []byte) (*S, error)
	meta           func(*S) *metav1.ObjectMeta
	// check returns what is wrong with obj, and with the update from old
	// when old is not nil.
	check func(obj, old *S) []problem
	// lookup, if set, returns what is wrong with obj (and the update from
	// old) given other objects it reads from the API server; it is called
	// only when check found nothing. Its error (the reads failed) admits the
	// object with a warning: a webhook never refuses for its own failure.
	lookup func(ctx context.Context, obj, old *S) ([]problem, error)
	// admitted, if set, is called for an object about to be admitted (not
	// in a dry run); the warnings it returns go with the answer.
	admitted func(ctx context.Context, obj *S) []string
}

// Why a workload (CloneSet, StatefulSet, DaemonSet) is refused: the
// rejection metric's reason. A refusal lists every problem found; its reason
// is that of the first, in this order (ReasonUndecodable before all).
const (
	// ReasonUndecodable: the object does not read as its kind (a
	// schemaless part, the template say, has a value of the wrong type):
	// stored, it would break every client that lists the kind.
	ReasonUndecodable = "Undecodable"
	// ReasonForbiddenUpdate: an update changes a spec field that may not
	// change.
	ReasonForbiddenUpdate = "ForbiddenUpdate"
	// ReasonInvalidSelector: the selector is missing, empty, malformed, or
	// does not match the template's labels.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonInvalidTemplate: the pod template is not one the workload can run
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
	// ReasonInvalidReserveOrdinals: a StatefulSet's reserveOrdinals entry
	// is neither an ordinal nor a range "a-b" with a ≤ b.
	ReasonInvalidReserveOrdinals = "InvalidReserveOrdinals"
	// ReasonMissingReadinessGate: pods updated in place lack the
	// InPlaceUpdateReady readiness gate that holds them out of their
	// Services meanwhile.
	ReasonMissingReadinessGate = "MissingReadinessGate"
	// ReasonInvalidRollingUpdate: a DaemonSet's rolling update asks for more
	// than all its pods.
	ReasonInvalidRollingUpdate = "InvalidRollingUpdate"
)

// admit judges a CREATE or UPDATE of the kind's resource; anything else,
// which a configuration should not send, is admitted.
func (w workload[S]) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) ||
		req.SubResource != "" || req.Resource.Group != group || req.Resource.Resource != w.resource {
		return server.Allowed()
	}
	obj, err := w.decode(req.Kind.Version, req.Object.Raw)
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
		return invalid(ReasonUndecodable, w.kind, &named.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{},
			fmt.Sprintf("does not read as a %s, as kruise-controller and every client would read it: %v", w.kind, err))})
	}
	var old *S
	var warnings []string
	if req.Operation == admissionv1.Update {
		if old, err = w.decode(req.Kind.Version, req.OldObject.Raw); err != nil {
			// The stored object is not ours to refuse (and the update may be
			// its fix): judge the new one alone.
			klog.FromContext(ctx).Error(err, "Checking an update without the stored object, which does not decode", "kind", w.kind)
			warnings, old = []string{fmt.Sprintf("kruise could not read the stored %s (%v): "+
				"the update was checked as a new %s, without the rules of updates", w.kind, err, w.kind)}, nil
		}
	}
	problems := w.check(obj, old)
	if len(problems) == 0 && w.lookup != nil {
		var err error
		if problems, err = w.lookup(ctx, obj, old); err != nil {
			res := unchecked(ctx, "the "+w.kind+" against the objects it depends on", err)
			res.Warnings = append(warnings, res.Warnings...)
			return res
		}
	}
	if len(problems) == 0 {
		if w.admitted != nil && (req.DryRun == nil || !*req.DryRun) {
			warnings = append(warnings, w.admitted(ctx, obj)...)
		}
		return server.Allowed(warnings...)
	}
	var errs field.ErrorList
	for _, p := range problems {
		errs = append(errs, p.errs...)
	}
	res := invalid(problems[0].reason, w.kind, w.meta(obj), errs)
	res.Warnings = warnings
	return res
}

// errUnknownVersion is a request of a version the webhook does not know,
// which a configuration should not send: admitted.
var errUnknownVersion = errors.New("unknown version")

// hubDecoder reads raw of a version as the v1beta1 type S; a v1alpha1
// object A is converted by toHub. It reads as client-go does (field names
// case-sensitive), so that what is judged is what kruise-controller reads.
func hubDecoder[S, A any](toHub func(*A) *S) func(version string, raw []byte) (*S, error) {
	return func(version string, raw []byte) (*S, error) {
		switch version {
		case appsv1beta1.SchemeGroupVersion.Version:
			obj := new(S)
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
				return nil, err
			}
			return obj, nil
		case appsv1alpha1.SchemeGroupVersion.Version:
			obj := new(A)
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
				return nil, err
			}
			return toHub(obj), nil
		}
		return nil, errUnknownVersion
	}
}

// problem is what one rule found, with the reason a refusal is counted under.
type problem struct {
	reason string
	errs   field.ErrorList
}

// problems collects what rules find, in the order they are checked.
type problems []problem

func (p *problems) add(reason string, errs field.ErrorList) {
	if len(errs) > 0 {
		*p = append(*p, problem{reason: reason, errs: errs})
	}
}

// specRule is a rule of a spec T alone, checked at CREATE and UPDATE.
type specRule[T any] struct {
	reason string
	check  func(*T) field.ErrorList
}

// addSpecRules checks spec against rules, in order. On UPDATE (old not nil)
// a rule only refuses what the update brings: a problem the stored object
// had already (it was created while the webhook was not called, say) does
// not block its updates, so that its finalizers can still be removed and its
// other fields still changed.
func addSpecRules[T any](out *problems, rules []specRule[T], spec, old *T) {
	for _, r := range rules {
		errs := r.check(spec)
		if old != nil && len(errs) > 0 {
			errs = withoutKnown(errs, r.check(old))
		}
		out.add(r.reason, errs)
	}
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
