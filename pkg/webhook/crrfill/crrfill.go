// Package crrfill is the mutating webhook of ContainerRecreateRequests: at
// create it fills a request in from its pod as admission does (the routing
// labels, each container's statusContext, preStop and ports) and defaults
// strategy.failurePolicy, so that the create response carries them, as
// OpenKruise's webhook does. kruise-controller's admission stays the
// authority: it admits the request (its Admitted condition, which the daemon
// requires), keeps these values, and writes them itself when the webhook did
// not (webhooks off or failed open, a pod still starting).
package crrfill

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/crradmit"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const (
	// Path is where the webhook is served, in the style of kruise's
	// validating paths (OpenKruise: /mutate-apps-kruise-io-v1alpha1-containerrecreaterequest).
	Path = "/mutate-apps-kruise-io-containerrecreaterequest"
	// Name names it in the webhook server's metrics and logs.
	Name = "containerrecreaterequest-mutate"
	// ReasonReadOnlyFieldSet: the creator set preStop, ports or
	// statusContext, which only admission writes.
	ReasonReadOnlyFieldSet = "ReadOnlyFieldSet"
)

// Webhook is the ContainerRecreateRequest mutating webhook; pods reads the
// request's pod from the API server.
func Webhook(pods corev1client.PodsGetter) server.Webhook {
	return server.Webhook{Name: Name, Path: Path, Admitter: &filler{pods: pods}, Reasons: []string{ReasonReadOnlyFieldSet}}
}

type filler struct {
	pods corev1client.PodsGetter
}

// Admit refuses a new request whose creator set a field only admission
// writes (as OpenKruise's webhook does; the policy kruise-crr-read-only-fields
// cannot tell them from the webhook's own once filled in), defaults
// strategy.failurePolicy, and fills the request in from its pod when the pod
// can be admitted now. Anything else it leaves to the validating webhook
// (a missing pod, an unknown container) and to kruise-controller (a pod
// still starting, a read that failed): it never refuses for the pod.
func (f *filler) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if req.Operation != admissionv1.Create || req.SubResource != "" ||
		req.Resource.Group != appsv1alpha1.GroupName || req.Resource.Resource != "containerrecreaterequests" {
		return server.Allowed()
	}
	// kruise's two versions have the same JSON: either decodes as v1alpha1.
	crr := &appsv1alpha1.ContainerRecreateRequest{}
	if err := json.Unmarshal(req.Object.Raw, crr); err != nil {
		klog.FromContext(ctx).Error(err, "Admitting a ContainerRecreateRequest the webhook could not decode")
		return server.Allowed(fmt.Sprintf("kruise could not fill in the ContainerRecreateRequest at admission (%v); kruise-controller does", err))
	}
	crr.Namespace = req.Namespace
	if set := crradmit.CreatorSetFields(crr); len(set) > 0 {
		return readOnly(crr, set)
	}
	patch := defaults(crr)
	fill, err := f.fill(ctx, crr)
	if err != nil {
		// The controller fills it in when it admits the request.
		klog.FromContext(ctx).Error(err, "Admitting a ContainerRecreateRequest without filling it in")
	}
	ops := append(patch, fill...)
	if len(ops) == 0 {
		return server.Allowed()
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return server.Errored(fmt.Errorf("encoding the patch: %w", err))
	}
	return server.Patched(body)
}

// fill is the fill-in of crr from its pod, read live (the pod may have been
// created a moment ago); none when the pod is missing or cannot be admitted
// now.
func (f *filler) fill(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) ([]json.RawMessage, error) {
	if crr.Spec.PodName == "" {
		return nil, nil // the schema refuses it
	}
	readCtx, cancel := validate.WithAnswerMargin(ctx)
	defer cancel()
	pod, err := f.pods.Pods(crr.Namespace).Get(readCtx, crr.Spec.PodName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil // the validating webhook refuses it
	case err != nil:
		return nil, fmt.Errorf("reading pod %s/%s: %w", crr.Namespace, crr.Spec.PodName, err)
	}
	raw, ok, err := crradmit.FillPatch(crr, pod)
	if err != nil || !ok {
		return nil, err
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, fmt.Errorf("reading the fill-in: %w", err)
	}
	return ops, nil
}

// defaults are the operations that default strategy.failurePolicy to Fail,
// as OpenKruise's webhook does (the CRD's schema defaults it too, unless
// strategy is absent in a version whose schema has no default for it).
func defaults(crr *appsv1alpha1.ContainerRecreateRequest) []json.RawMessage {
	switch {
	case crr.Spec.Strategy == nil:
		return []json.RawMessage{op("/spec/strategy", map[string]string{"failurePolicy": string(appsv1alpha1.ContainerRecreateRequestFailurePolicyFail)})}
	case crr.Spec.Strategy.FailurePolicy == "":
		return []json.RawMessage{op("/spec/strategy/failurePolicy", appsv1alpha1.ContainerRecreateRequestFailurePolicyFail)}
	}
	return nil
}

func op(path string, value any) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"op": "add", "path": path, "value": value}) // strings and a map of strings: never fails
	return raw
}

// readOnly refuses a request whose creator set fields admission writes, as
// the API server refuses an invalid object.
func readOnly(crr *appsv1alpha1.ContainerRecreateRequest, set []string) server.Result {
	var errs field.ErrorList
	for i, c := range crr.Spec.Containers {
		for _, s := range set {
			if name, f, _ := strings.Cut(s, "."); name == c.Name {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "containers").Index(i).Child(f),
					"preStop, ports and statusContext are read-only: kruise fills them in from the pod at admission; leave them out"))
			}
		}
	}
	name := crr.Name
	if name == "" {
		name = crr.GenerateName
	}
	st := apierrors.NewInvalid(schema.GroupKind{Group: appsv1alpha1.GroupName, Kind: "ContainerRecreateRequest"}, name, errs).ErrStatus
	return server.Invalid(ReasonReadOnlyFieldSet, st.Message)
}
