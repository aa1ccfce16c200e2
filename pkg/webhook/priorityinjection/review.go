package priorityinjection

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ReasonBadRequest: the request's object is not a pod that decodes.
	ReasonBadRequest Reason = "BadRequest"
	// ReasonInternalError: the webhook failed; the pod is refused rather
	// than admitted without its launch order.
	ReasonInternalError Reason = "InternalError"
)

// Review answers an admission.k8s.io/v1 request for pods: a CREATE gets
// Mutate's patch or refusal; any other operation, resource or subresource
// is allowed untouched. reason is "" when the pod is allowed, else why it
// was refused (a metrics label).
func Review(req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse, reason Reason) {
	resp = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Resource.Group != "" || req.Resource.Resource != "pods" || req.SubResource != "" || req.Operation != admissionv1.Create {
		return resp, ""
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return deny(resp, metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: fmt.Sprintf("decoding the pod: %v", err),
		}), ReasonBadRequest
	}
	patch, err := Mutate(Request{Namespace: req.Namespace, UID: string(req.UID), Pod: pod})
	var refusal *Refusal
	switch {
	case errors.As(err, &refusal):
		name := pod.Name
		if name == "" {
			name = pod.GenerateName
		}
		return deny(resp, refusal.Status(name)), refusal.Reason
	case err != nil:
		// Mutate refuses or patches; nothing else can fail. Should that
		// change, the pod is refused with the error rather than admitted
		// unordered.
		return deny(resp, metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
			Message: err.Error(),
		}), ReasonInternalError
	case len(patch) == 0:
		return resp, ""
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return deny(resp, metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
			Message: fmt.Sprintf("encoding the launch-priority patch: %v", err),
		}), ReasonInternalError
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = raw, &pt
	return resp, ""
}

func deny(resp *admissionv1.AdmissionResponse, st metav1.Status) *admissionv1.AdmissionResponse {
	resp.Allowed = false
	resp.Result = &st
	return resp
}
