package livenessinjection

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// Path is where the webhook is served: an entry of its own (not OpenKruise's /mutate-pod),
	// so that only opted-in pods are sent and its failurePolicy can be Ignore.
	Path = "/mutate-pod-enhanced-liveness"
	// Name names it in the webhook server's metrics and logs.
	Name = "pod-enhanced-liveness"
)

// Webhook is the pod webhook for the webhook server. Pods of kube-system and of kruiseNamespace
// are allowed untouched (podscope) even if the configuration sends them.
func Webhook(kruiseNamespace string) server.Webhook {
	return server.Webhook{
		Name: Name,
		Path: Path,
		Admitter: server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
			if podscope.Excluded(req.Namespace, kruiseNamespace) {
				return server.Allowed()
			}
			return admit(ctx, req)
		}),
	}
}

func admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if req.Operation != admissionv1.Create || req.SubResource != "" || req.Resource.Group != "" || req.Resource.Resource != "pods" {
		return server.Allowed()
	}
	// Whatever goes wrong, the pod is admitted as it is, as failurePolicy Ignore would: it keeps
	// its livenessProbe and the kubelet probes it, which is safe.
	body, err := patch(req)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Admitting the pod with its liveness probes left to the kubelet")
		return server.Allowed("enhanced liveness not applied, the kubelet keeps the liveness probes: " + err.Error())
	}
	if body == nil {
		return server.Allowed()
	}
	klog.FromContext(ctx).V(3).Info("Moving the liveness probes to kruise-daemon")
	return server.Patched(body)
}

// patch is the JSON patch for the request's pod; nil when it needs none.
func patch(req *admissionv1.AdmissionRequest) ([]byte, error) {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	ops, err := Mutate(pod)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	return body, nil
}
