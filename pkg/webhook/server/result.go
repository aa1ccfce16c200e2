package server

import (
	"context"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/webhook/internal/review"
)

// Admitter decides one admission request. It runs on the request's context
// (cancelled at the API server's timeout; its logger names the webhook and
// the object) and must not keep req. A panic is recovered and answered as an
// error.
type Admitter interface {
	Admit(ctx context.Context, req *admissionv1.AdmissionRequest) Result
}

// AdmitFunc is a function as an Admitter.
type AdmitFunc func(ctx context.Context, req *admissionv1.AdmissionRequest) Result

// Admit implements Admitter.
func (f AdmitFunc) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) Result {
	return f(ctx, req)
}

// Reasons the server itself counts rejections under, besides those a webhook
// declares.
const (
	// ReasonOther is a denial whose reason the webhook did not declare.
	ReasonOther = "Other"
	// ReasonHandlerError is a Result with Err: the handler could not decide.
	ReasonHandlerError = "HandlerError"
	// ReasonPanic is a handler that panicked.
	ReasonPanic = "Panic"
	// ReasonInvalidPatch is an allowed Result whose patch is not a JSON
	// patch: a handler bug, answered as an error rather than sent on.
	ReasonInvalidPatch = "InvalidPatch"
)

// Result is an admission decision. Build it with Allowed, Patched, Denied,
// Invalid or Errored. The zero Result denies, with code 403 and no message.
type Result struct {
	// Allowed admits the object.
	Allowed bool
	// Patch is a JSON patch (RFC 6902) of the object, with Allowed; empty
	// or "[]" is no change.
	Patch []byte
	// Warnings are shown to the client (kubectl prints them), allowed or not.
	Warnings []string
	// Reason is a denial's reason: one of the webhook's declared Reasons,
	// the label of kruise_webhook_admission_rejections_total. An undeclared
	// reason is counted as ReasonOther.
	Reason string
	// Message tells the user why the object was denied.
	Message string
	// Code is a denial's HTTP status code, 400 to 599; zero means 403.
	Code int32
	// Err means the handler could not decide (a read failed, say): the
	// request is refused with code 500 and the error as message, and
	// counted as an error, not a denial.
	Err error
}

// Allowed admits the object unchanged.
func Allowed(warnings ...string) Result { return Result{Allowed: true, Warnings: warnings} }

// Patched admits the object with a JSON patch applied.
func Patched(patch []byte, warnings ...string) Result {
	return Result{Allowed: true, Patch: patch, Warnings: warnings}
}

// Denied refuses the object with code 403, counted under reason.
func Denied(reason, message string) Result {
	return Result{Reason: reason, Message: message, Code: http.StatusForbidden}
}

// Invalid refuses the object with code 422 (the object is invalid),
// counted under reason.
func Invalid(reason, message string) Result {
	return Result{Reason: reason, Message: message, Code: http.StatusUnprocessableEntity}
}

// Errored refuses the request because the handler could not decide.
func Errored(err error) Result { return Result{Err: err} }

// outcome is how a request was answered, for the metrics and the log.
type outcome struct {
	result string // resultAllowed, ...
	reason string // the rejection reason, when refused in-band
}

// response turns r into the answer to the request uid. declared are the
// webhook's rejection reasons.
func response(uid types.UID, r Result, declared map[string]bool) (*admissionv1.AdmissionResponse, outcome) {
	resp := &admissionv1.AdmissionResponse{UID: uid, Warnings: r.Warnings}
	if r.Err != nil {
		resp.Result = review.Failure(http.StatusInternalServerError, r.Err.Error())
		return resp, outcome{result: resultError, reason: ReasonHandlerError}
	}
	if !r.Allowed {
		code := r.Code
		if code < 400 || code > 599 {
			code = http.StatusForbidden
		}
		resp.Result = review.Failure(code, r.Message)
		reason := r.Reason
		if !declared[reason] {
			reason = ReasonOther
		}
		return resp, outcome{result: resultDenied, reason: reason}
	}
	resp.Allowed = true
	if len(r.Patch) == 0 {
		return resp, outcome{result: resultAllowed}
	}
	ops, err := jsonpatch.DecodePatch(r.Patch)
	if err != nil {
		resp.Allowed = false
		resp.Result = review.Failure(http.StatusInternalServerError, fmt.Sprintf("the webhook returned an invalid JSON patch: %v", err))
		return resp, outcome{result: resultError, reason: ReasonInvalidPatch}
	}
	if len(ops) == 0 {
		return resp, outcome{result: resultAllowed}
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = r.Patch, &pt
	return resp, outcome{result: resultPatched}
}
