// Package conversion is the CRD conversion webhook of apps.kruise.io
// (/convert): it converts NodeImage, ImagePullJob, ImageListPullJob,
// ContainerRecreateRequest, CloneSet and StatefulSet objects between v1alpha1 and v1beta1 with the
// lossless conversions of pkg/apis/apps/v1alpha1, answering ConversionReview
// v1.
//
// Objects are decoded into the Go types, converted and encoded again. The
// API server prunes every object it sends and receives to the CRD's schema,
// which is generated from those types; a field the types do not know (CRDs
// newer than this binary) fails the conversion with a message naming it
// rather than being dropped.
package conversion

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"

	"github.com/nodekruise/kruise/pkg/webhook/internal/review"
)

// Path is where the CRDs' spec.conversion.webhook calls.
const Path = "/convert"

// DefaultMaxBodyBytes bounds a ConversionReview's body. Unlike admission, the
// API server converts a whole list in one review (every item not yet in the
// wanted version): a v1alpha1 list of the NodeImages of a large cluster (one
// per node, a few KiB each) is tens of MiB.
const DefaultMaxBodyBytes = 64 << 20

// Options configures a Handler.
type Options struct {
	// MaxBodyBytes bounds a review's body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Metrics is where the conversion metrics are registered; nil keeps
	// them unregistered.
	Metrics prometheus.Registerer
}

// Handler serves ConversionReview v1. Mount it on Path of the webhook server.
type Handler struct {
	maxBody int64
	metrics *metrics
}

// NewHandler builds a Handler and registers its metrics.
func NewHandler(opts Options) (*Handler, error) {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	m := newMetrics()
	if opts.Metrics != nil {
		for _, c := range m.collectors() {
			if err := opts.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("registering conversion metrics: %w", err)
			}
		}
	}
	return &Handler{maxBody: opts.MaxBodyBytes, metrics: m}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	logger := klog.FromContext(r.Context()).WithValues("webhook", "conversion")
	code := http.StatusOK
	var resp *apiextensionsv1.ConversionResponse
	req, uid, badCode, err := decodeConversionReview(w, r, h.maxBody)
	if err != nil {
		logger.Info("Refused a conversion request", "code", badCode, "uid", uid, "err", err)
		code = badCode
		resp = &apiextensionsv1.ConversionResponse{UID: uid, Result: *review.Failure(int32(badCode), err.Error())}
		h.metrics.requests.WithLabelValues(resultError).Inc()
	} else {
		logger = logger.WithValues("uid", req.UID, "desiredAPIVersion", req.DesiredAPIVersion, "objects", len(req.Objects))
		resp = h.convert(klog.NewContext(r.Context(), logger), req)
		if resp.Result.Status == metav1.StatusSuccess {
			logger.V(4).Info("Converted objects")
			h.metrics.requests.WithLabelValues(resultSucceeded).Inc()
		} else {
			logger.Info("Conversion failed", "message", resp.Result.Message)
			h.metrics.requests.WithLabelValues(resultFailed).Inc()
		}
	}
	if err := review.Write(w, code, &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Response: resp,
	}); err != nil {
		logger.Error(err, "Answering a conversion request")
	}
	h.metrics.duration.Observe(time.Since(start).Seconds())
}

// convert answers one request: every object converted, in order, or a
// failure naming the first that could not be.
func (h *Handler) convert(ctx context.Context, req *apiextensionsv1.ConversionRequest) (resp *apiextensionsv1.ConversionResponse) {
	resp = &apiextensionsv1.ConversionResponse{UID: req.UID}
	defer func() {
		if v := recover(); v != nil {
			klog.FromContext(ctx).Error(fmt.Errorf("panic: %v", v), "Conversion panicked")
			resp.ConvertedObjects = nil
			resp.Result = *review.Failure(http.StatusInternalServerError, fmt.Sprintf("internal error converting to %s: %v", req.DesiredAPIVersion, v))
		}
	}()
	if err := checkDesired(req.DesiredAPIVersion); err != nil {
		resp.Result = *review.Failure(http.StatusBadRequest, err.Error())
		return resp
	}
	objects := make([]runtime.RawExtension, len(req.Objects))
	counts := map[string]int{}
	for i, o := range req.Objects {
		c, err := convertObject(o.Raw, req.DesiredAPIVersion)
		if err != nil {
			resp.Result = *review.Failure(http.StatusUnprocessableEntity, fmt.Sprintf("object %d: %v", i, err))
			return resp
		}
		objects[i] = runtime.RawExtension{Raw: c.raw}
		if !c.passed {
			counts[c.kind]++
		}
	}
	for kind, n := range counts {
		h.metrics.objects.WithLabelValues(kind, req.DesiredAPIVersion).Add(float64(n))
	}
	resp.ConvertedObjects = objects
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

// decodeConversionReview reads a ConversionReview v1 with a request. On
// failure it returns the HTTP code to answer with, and the request's UID
// when the body had one.
func decodeConversionReview(w http.ResponseWriter, r *http.Request, limit int64) (*apiextensionsv1.ConversionRequest, types.UID, int, error) {
	body, code, err := review.Read(w, r, limit)
	if err != nil {
		return nil, "", code, err
	}
	head, uid, err := review.Head(body, "ConversionReview")
	if err != nil {
		return nil, "", http.StatusBadRequest, err
	}
	if want := apiextensionsv1.SchemeGroupVersion.String(); head.APIVersion != want || head.Kind != "ConversionReview" {
		got := head.APIVersion
		if got == "" {
			got = "no apiVersion"
		}
		return nil, uid, http.StatusBadRequest, fmt.Errorf("got %s %q: this webhook serves %s ConversionReview only (set conversionReviewVersions: [v1])",
			got, head.Kind, want)
	}
	var cr apiextensionsv1.ConversionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &cr); err != nil {
		return nil, uid, http.StatusBadRequest, fmt.Errorf("malformed ConversionReview: %w", err)
	}
	switch {
	case cr.Request == nil:
		return nil, "", http.StatusBadRequest, fmt.Errorf("the ConversionReview has no request")
	case cr.Request.UID == "":
		return nil, "", http.StatusBadRequest, fmt.Errorf("the ConversionReview's request has no uid")
	}
	return cr.Request, cr.Request.UID, http.StatusOK, nil
}
