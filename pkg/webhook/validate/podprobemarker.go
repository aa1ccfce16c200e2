package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// PodProbeMarkerPath is where the API server sends PodProbeMarkers: OpenKruise's path.
	PodProbeMarkerPath = "/validate-apps-kruise-io-podprobemarker"
	// PodProbeMarkerWebhookName names it in the webhook server's metrics and logs.
	PodProbeMarkerWebhookName = "podprobemarker-validate"

	// ReasonPodProbeMarkerDisabled: gate PodProbeMarkerGate or KruiseDaemon is off, so nothing
	// would run the probes.
	ReasonPodProbeMarkerDisabled = "PodProbeMarkerDisabled"
	// ReasonInvalidProbes: a probe, its marker policy or its condition type breaks OpenKruise's
	// rules.
	ReasonInvalidProbes = "InvalidProbes"
	// ReasonRequesterMismatch: the requester annotation names someone other than the user who
	// sent the request (the mutating webhook that writes it did not run).
	ReasonRequesterMismatch = "RequesterMismatch"
)

// PodProbeMarkerWebhook refuses a PodProbeMarker (create, or an update of its spec or requester)
// that OpenKruise v1.9.0 refuses, that is sent while off names the gate that is off
// (PodProbeMarkerGate or KruiseDaemon; "" when both are on), or that has exec probes while its
// requester may not create pods/exec in the namespace, nor on any of the first pods its selector
// matches now. The last is stricter than OpenKruise, which runs anyone's command in every pod the
// selector matches; kruise-controller asks again per pod before a command reaches it.
func PodProbeMarkerWebhook(client kubernetes.Interface, off string) server.Webhook {
	v := &ppmValidator{client: client, off: off}
	return server.Webhook{Name: PodProbeMarkerWebhookName, Path: PodProbeMarkerPath, Admitter: server.AdmitFunc(v.admit),
		Reasons: []string{ReasonPodProbeMarkerDisabled, ReasonUndecodable, ReasonInvalidSelector, ReasonInvalidProbes,
			ReasonRequesterMismatch, ReasonRequesterForbidden}}
}

type ppmValidator struct {
	client kubernetes.Interface
	off    string
}

func (v *ppmValidator) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != group || req.Resource.Resource != "podprobemarkers" {
		return server.Allowed()
	}
	if v.off != "" {
		return server.Result{Reason: ReasonPodProbeMarkerDisabled, Code: http.StatusForbidden,
			Message: fmt.Sprintf("PodProbeMarkers are off in this kruise: feature gate %s is not enabled", v.off)}
	}
	ppm, res, ok := decodePodProbeMarker(req.Object.Raw)
	if !ok {
		return res
	}
	var old *appsv1alpha1.PodProbeMarkerSpec
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		prev, res, ok := decodePodProbeMarker(req.OldObject.Raw)
		if !ok {
			return res
		}
		old = &prev.Spec
	}
	if sel, probes := checkPodProbeMarker(&ppm.Spec, old); len(sel)+len(probes) > 0 {
		reason := ReasonInvalidProbes
		if len(sel) > 0 {
			reason = ReasonInvalidSelector
		}
		return invalid(reason, "PodProbeMarker", &ppm.ObjectMeta, append(sel, probes...))
	}
	r := ejobaccess.FromUserInfo(req.UserInfo)
	if got, ok := ppm.Annotations[nodeprobe.RequesterAnnotation]; ok && got != r.Encode() {
		return server.Denied(ReasonRequesterMismatch, fmt.Sprintf("PodProbeMarker %q: annotation %s must name the user who sends the request "+
			"(kruise's mutating webhook mpodprobemarker.kb.io writes it; is it installed?)", displayName(&ppm.ObjectMeta), nodeprobe.RequesterAnnotation))
	}
	if !podProbeMarkerHasExec(&ppm.Spec) {
		return server.Allowed()
	}
	return v.requesterMayExec(ctx, req.Namespace, r, ppm)
}

// decodePodProbeMarker reads a PodProbeMarker, or says why not as the refusal.
func decodePodProbeMarker(raw []byte) (*appsv1alpha1.PodProbeMarker, server.Result, bool) {
	ppm := &appsv1alpha1.PodProbeMarker{}
	if err := json.Unmarshal(raw, ppm); err != nil {
		var named struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(raw, &named)
		return nil, invalid(ReasonUndecodable, "PodProbeMarker", &named.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec"),
			field.OmitValueType{}, fmt.Sprintf("does not read as a PodProbeMarker: %v", err))}), false
	}
	return ppm, server.Result{}, true
}

// requesterMayExec admits a marker with exec probes if r may create pods/exec across the
// namespace, or on at least one of the first pods the selector matches now (rights given by
// resourceNames; kruise-controller runs the commands only in the pods r may exec into). A failed
// question refuses: this is the requester's gate.
func (v *ppmValidator) requesterMayExec(ctx context.Context, namespace string, r ejobaccess.Requester, ppm *appsv1alpha1.PodProbeMarker) server.Result {
	ctx, cancel := WithAnswerMargin(ctx)
	defer cancel()
	allowed, why, err := v.mayExec(ctx, r, namespace, "")
	if err != nil {
		return server.Errored(err)
	}
	if allowed {
		return server.Allowed()
	}
	pods, err := v.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selectorOf(&ppm.Spec), Limit: ejobPodsAsked})
	if err != nil {
		return server.Errored(fmt.Errorf("listing the pods the selector matches: %w", err))
	}
	for _, p := range pods.Items {
		ok, _, err := v.mayExec(ctx, r, namespace, p.Name)
		if err != nil {
			return server.Errored(err)
		}
		if ok {
			return server.Allowed(fmt.Sprintf("user %q may not exec into every pod of namespace %q (denied: %s); "+
				"the PodProbeMarker's exec probes run only in the pods the user may exec into", r.Username, namespace, why))
		}
	}
	return server.Denied(ReasonRequesterForbidden, fmt.Sprintf("PodProbeMarker %q has exec probes, but user %q may not %s in namespace %q "+
		"(denied: %s), nor on any of the %d pods the selector matches now: an exec probe runs its command with its requester's rights; "+
		"use tcpSocket or httpGet probes, or ask for pods/exec", displayName(&ppm.ObjectMeta), r.Username, nodeprobe.ExecCheck,
		namespace, why, len(pods.Items)))
}

// mayExec asks whether r may create pods/exec on the pod name (every pod when "").
func (v *ppmValidator) mayExec(ctx context.Context, r ejobaccess.Requester, namespace, name string) (bool, string, error) {
	d, err := nodeprobe.AskExec(ctx, v.client.AuthorizationV1().SubjectAccessReviews(), r, namespace, name)
	return d.Allowed, d.Denied, err
}
