package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/webhook/server"
)

// group is the API group of the kinds validated here.
const group = "apps.kruise.io"

// judged reports whether req is one these webhooks decide: a CREATE of
// resource (no subresource) in the apps.kruise.io group, whatever its
// version. Anything else, which a configuration should not send, is admitted.
func judged(req *admissionv1.AdmissionRequest, resource string) bool {
	return req.Operation == admissionv1.Create && req.SubResource == "" &&
		req.Resource.Group == group && req.Resource.Resource == resource
}

// decode reads the request's object. The fields these webhooks read have
// the same JSON in v1alpha1 and v1beta1, so either version decodes into the
// v1beta1 types.
func decode(req *admissionv1.AdmissionRequest, into any) error {
	if err := json.Unmarshal(req.Object.Raw, into); err != nil {
		return fmt.Errorf("decoding the %s %s: %w", req.Kind.Kind, req.Kind.Version, err)
	}
	return nil
}

// displayName is how a refusal names the object: its name, or its
// generateName when the API server has not made the name yet.
func displayName(m *metav1.ObjectMeta) string {
	if m.Name == "" {
		return m.GenerateName
	}
	return m.Name
}

// invalid refuses the object as the API server refuses an invalid one (422,
// "Kind.group "name" is invalid: field: Invalid value: ..."), counted under
// reason.
func invalid(reason, kind string, meta *metav1.ObjectMeta, errs field.ErrorList) server.Result {
	st := apierrors.NewInvalid(schema.GroupKind{Group: group, Kind: kind}, displayName(meta), errs).ErrStatus
	return server.Invalid(reason, st.Message)
}

// unchecked admits an object the webhook could not judge, with a warning to
// the client and a log line: a webhook never refuses for its own failure
// (the API server's answer, a decoding error); kruise-controller answers in
// the object's status.
func unchecked(ctx context.Context, what string, err error) server.Result {
	klog.FromContext(ctx).Error(err, "Admitting an object the webhook could not check; its status will answer", "check", what)
	return server.Allowed(fmt.Sprintf("kruise could not check %s at admission (%v); kruise-controller answers in the object's status", what, err))
}

// Reading the pod must leave time to answer before the API server gives up
// on the webhook (timeoutSeconds, passed as the request's timeout): it
// applies failurePolicy then, and with Fail a slow read would refuse the
// object for kruise's own failure. The read gets the time left but a margin
// of a quarter of it, and at least minAnswerMargin.
const minAnswerMargin = 250 * time.Millisecond

// WithAnswerMargin is ctx with a deadline that leaves the margin; for every
// webhook that reads the API server while the API server waits.
func WithAnswerMargin(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	left := time.Until(dl)
	return context.WithTimeout(ctx, left-max(left/4, minAnswerMargin))
}
