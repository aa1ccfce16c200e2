package server

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"

	"github.com/nodekruise/kruise/pkg/webhook/internal/review"
)

// MaxAdmissionBodyBytes bounds an AdmissionReview's body. The API server
// accepts write bodies up to 3 MiB (its MaxRequestBodyBytes: twice etcd's
// default 1.5 MiB request limit, for JSON's overhead over protobuf), and an
// UPDATE review carries the object and the old object, each up to that
// size, besides the request's metadata (userInfo, options). 3 MiB alone
// would refuse the review of an update the API server itself accepts; 7 MiB
// (2 × 3 MiB + 1 MiB) never does, and still bounds what one request can
// make the server hold.
const MaxAdmissionBodyBytes = 7 << 20

// Webhook is one admission endpoint.
type Webhook struct {
	// Name identifies the webhook in metrics and logs ("pod-mutate"); the
	// label value of kruise_webhook_admission_* and unique in a Server.
	Name string
	// Path is the URL path the webhook configuration calls ("/mutate-pod").
	Path string
	// Admitter decides each request.
	Admitter Admitter
	// Reasons are the denial reasons the Admitter may return in
	// Result.Reason (CamelCase, "InvalidPriority"): the bounded label values
	// of the rejection metric. Any other reason is counted as ReasonOther.
	Reasons []string
}

// HandleAdmission mounts w on w.Path.
func (s *Server) HandleAdmission(w Webhook) error {
	if w.Name == "" || strings.ContainsAny(w.Name, " \t\n\"") {
		return fmt.Errorf("webhook server: webhook name %q must be non-empty, without spaces or quotes", w.Name)
	}
	if w.Admitter == nil {
		return fmt.Errorf("webhook server: webhook %s has no Admitter", w.Name)
	}
	declared := map[string]bool{}
	for _, r := range w.Reasons {
		switch {
		case r == "" || strings.ContainsAny(r, " \t\n\""):
			return fmt.Errorf("webhook server: webhook %s: reason %q must be non-empty, without spaces or quotes", w.Name, r)
		case r == ReasonOther || r == ReasonHandlerError || r == ReasonPanic || r == ReasonInvalidPatch:
			return fmt.Errorf("webhook server: webhook %s: reason %q is the server's own", w.Name, r)
		case declared[r]:
			return fmt.Errorf("webhook server: webhook %s: reason %q declared twice", w.Name, r)
		}
		declared[r] = true
	}
	if err := s.claim(w.Path, w.Name); err != nil {
		return err
	}
	s.metrics.initWebhook(w.Name, w.Reasons)
	s.mux.Handle(w.Path, &admissionHandler{name: w.Name, admitter: w.Admitter, declared: declared, metrics: s.metrics})
	return nil
}

type admissionHandler struct {
	name     string
	admitter Admitter
	declared map[string]bool
	metrics  *metrics
}

func (h *admissionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	logger := klog.FromContext(r.Context()).WithValues("webhook", h.name)
	var (
		resp *admissionv1.AdmissionResponse
		out  outcome
		code = http.StatusOK
	)
	req, uid, badCode, err := decodeAdmissionReview(w, r)
	if err != nil {
		logger.Info("Refused an admission request", "code", badCode, "uid", uid, "err", err)
		code = badCode
		resp = &admissionv1.AdmissionResponse{UID: uid, Result: review.Failure(int32(badCode), err.Error())}
		out = outcome{result: resultError}
	} else {
		logger = logger.WithValues("uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace,
			"name", req.Name, "operation", req.Operation)
		ctx, cancel := requestContext(r)
		defer cancel()
		res, panicked := h.call(klog.NewContext(ctx, logger), req)
		resp, out = response(req.UID, res, h.declared)
		if panicked {
			out.reason = ReasonPanic
		}
		switch out.result {
		case resultError:
			logger.Info("Admission request failed", "reason", out.reason, "message", resp.Result.Message)
		case resultDenied:
			logger.V(2).Info("Admission request denied", "reason", out.reason, "code", resp.Result.Code, "message", resp.Result.Message)
		default:
			logger.V(4).Info("Admission request allowed", "result", out.result)
		}
	}
	if err := review.Write(w, code, &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	}); err != nil {
		logger.Error(err, "Answering an admission request")
	}
	h.metrics.observe(h.name, out, time.Since(start))
}

// call runs the Admitter, turning a panic into an error Result.
func (h *admissionHandler) call(ctx context.Context, req *admissionv1.AdmissionRequest) (res Result, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			klog.FromContext(ctx).Error(fmt.Errorf("panic: %v", v), "Admission handler panicked", "stack", stack())
			res, panicked = Errored(fmt.Errorf("internal error in webhook %s: the handler panicked: %v", h.name, v)), true
		}
	}()
	return h.admitter.Admit(ctx, req), false
}

func stack() string { return string(debug.Stack()) }

// requestContext bounds the request's context by the API server's timeout
// for this call (the "timeout" query parameter it adds, "10s"), at most
// MaxHandlerTimeout.
func requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	timeout := MaxHandlerTimeout
	if d, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && d > 0 && d < timeout {
		timeout = d
	}
	return context.WithTimeout(r.Context(), timeout)
}

// decodeAdmissionReview reads an AdmissionReview v1 with a request. On
// failure it returns the HTTP code to answer with, and the request's UID
// when the body had one.
func decodeAdmissionReview(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionRequest, types.UID, int, error) {
	body, code, err := review.Read(w, r, MaxAdmissionBodyBytes)
	if err != nil {
		return nil, "", code, err
	}
	head, uid, err := review.Head(body, "AdmissionReview")
	if err != nil {
		return nil, "", http.StatusBadRequest, err
	}
	if want := admissionv1.SchemeGroupVersion.String(); head.APIVersion != want || head.Kind != "AdmissionReview" {
		return nil, uid, http.StatusBadRequest, fmt.Errorf("got %s %q: this webhook serves %s AdmissionReview only (set admissionReviewVersions: [v1])",
			orNone(head.APIVersion), head.Kind, want)
	}
	var ar admissionv1.AdmissionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &ar); err != nil {
		return nil, uid, http.StatusBadRequest, fmt.Errorf("malformed AdmissionReview: %w", err)
	}
	switch {
	case ar.Request == nil:
		return nil, "", http.StatusBadRequest, fmt.Errorf("the AdmissionReview has no request")
	case ar.Request.UID == "":
		return nil, "", http.StatusBadRequest, fmt.Errorf("the AdmissionReview's request has no uid")
	}
	return ar.Request, ar.Request.UID, http.StatusOK, nil
}

func orNone(apiVersion string) string {
	if apiVersion == "" {
		return "no apiVersion"
	}
	return apiVersion
}
