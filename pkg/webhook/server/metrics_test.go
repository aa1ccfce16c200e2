package server

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/test/unit/metrictest"
)

func TestMetricsPerWebhookResultAndReason(t *testing.T) {
	results := map[string]Result{
		"allow":     Allowed(),
		"patch":     Patched([]byte(labelPatch)),
		"deny":      Denied("InvalidPriority", "no"),
		"undecl":    Denied("SomethingElse", "no"),
		"error":     Errored(errors.New("cannot read")),
		"badpatch":  Patched([]byte("nope")),
		"validated": Allowed(),
	}
	e := startEnv(t, func(s *Server) {
		require.NoError(t, s.HandleAdmission(Webhook{Name: "pod", Path: "/mutate-pod",
			Reasons: []string{"InvalidPriority", "BarrierEnvSet"},
			Admitter: AdmitFunc(func(_ context.Context, req *admissionv1.AdmissionRequest) Result {
				return results[string(req.UID)]
			})}))
		require.NoError(t, s.HandleAdmission(Webhook{Name: "crr", Path: "/validate-crr",
			Admitter: AdmitFunc(func(context.Context, *admissionv1.AdmissionRequest) Result { return Allowed() })}))
	})

	// Every series exists at zero before the first request.
	for _, r := range []string{"allowed", "patched", "denied", "error"} {
		assert.Zero(t, metrictest.Counter(t, e.reg, "kruise_webhook_admission_requests_total", map[string]string{"webhook": "crr", "result": r}))
	}
	for _, r := range []string{"InvalidPriority", "BarrierEnvSet", "Other", "HandlerError", "Panic", "InvalidPatch"} {
		assert.Zero(t, metrictest.Counter(t, e.reg, "kruise_webhook_admission_rejections_total", map[string]string{"webhook": "pod", "reason": r}))
	}

	for _, uid := range []string{"allow", "patch", "patch", "deny", "deny", "deny", "undecl", "error", "badpatch", "validated"} {
		code, _ := e.post("/mutate-pod", podReview(t, types.UID(uid)))
		require.Equal(t, http.StatusOK, code)
	}
	code, _ := e.post("/validate-crr", podReview(t, "x"))
	require.Equal(t, http.StatusOK, code)
	code, _ = e.post("/mutate-pod", []byte("{"))
	require.Equal(t, http.StatusBadRequest, code)

	for result, want := range map[string]float64{"allowed": 2, "patched": 2, "denied": 4, "error": 3} {
		assert.Equal(t, want, metrictest.Counter(t, e.reg, "kruise_webhook_admission_requests_total",
			map[string]string{"webhook": "pod", "result": result}), result)
	}
	for reason, want := range map[string]float64{"InvalidPriority": 3, "BarrierEnvSet": 0, "Other": 1,
		"HandlerError": 1, "InvalidPatch": 1, "Panic": 0} {
		assert.Equal(t, want, metrictest.Counter(t, e.reg, "kruise_webhook_admission_rejections_total",
			map[string]string{"webhook": "pod", "reason": reason}), reason)
	}
	assert.Equal(t, 1.0, metrictest.Counter(t, e.reg, "kruise_webhook_admission_requests_total", map[string]string{"webhook": "crr", "result": "allowed"}))

	// Latency: one observation per request, malformed ones included; the
	// series is per webhook, never per reason or path.
	pod := metrictest.Find(t, e.reg, "kruise_webhook_admission_duration_seconds", map[string]string{"webhook": "pod"})
	require.NotNil(t, pod)
	assert.Equal(t, uint64(11), pod.GetHistogram().GetSampleCount())
	assert.Positive(t, pod.GetHistogram().GetSampleSum())
	crr := metrictest.Find(t, e.reg, "kruise_webhook_admission_duration_seconds", map[string]string{"webhook": "crr"})
	require.NotNil(t, crr)
	assert.Equal(t, uint64(1), crr.GetHistogram().GetSampleCount())
	assert.Equal(t, 0.005, admissionDurationBuckets[3], "a bucket bound at the pod webhook's 5 ms budget")
}
