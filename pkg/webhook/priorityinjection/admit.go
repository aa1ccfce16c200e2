package priorityinjection

import (
	"context"
	"errors"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

// Path is where the pod mutating webhook is served: OpenKruise's path for
// its pod webhook, so that its docs apply.
const Path = "/mutate-pod"

// WebhookName names the pod webhook in the webhook server's metrics
// (kruise_webhook_admission_*{webhook="pod-mutate"}) and logs.
const WebhookName = "pod-mutate"

// Webhook is the pod mutating webhook for the webhook server: Review as an
// Admitter on Path, with every reason it may refuse a pod for. Pods of
// kube-system and of kruiseNamespace are allowed untouched (podscope), even
// if the configuration sends them.
func Webhook(kruiseNamespace string) server.Webhook {
	return server.Webhook{
		Name: WebhookName,
		Path: Path,
		Admitter: server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
			if podscope.Excluded(req.Namespace, kruiseNamespace) {
				return server.Allowed()
			}
			return admit(ctx, req)
		}),
		Reasons: []string{
			string(ReasonInvalidPriority), string(ReasonInvalidAnnotation), string(ReasonBarrierSet),
			string(ReasonBadRequest), string(ReasonInternalError),
		},
	}
}

// admit turns Review's answer into the server's Result.
func admit(_ context.Context, req *admissionv1.AdmissionRequest) server.Result {
	resp, reason := Review(req)
	switch {
	case resp.Allowed:
		return server.Patched(resp.Patch)
	case resp.Result == nil:
		// Review always explains a refusal; should it not, the pod is
		// refused as an error rather than admitted unordered.
		return server.Errored(errors.New("container launch priority: refused without a reason"))
	}
	return server.Result{Reason: string(reason), Message: resp.Result.Message, Code: resp.Result.Code}
}
