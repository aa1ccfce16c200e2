package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// EphemeralJobPath is where the API server sends EphemeralJobs: OpenKruise's path.
	EphemeralJobPath = "/validate-apps-kruise-io-v1alpha1-ephemeraljob"
	// EphemeralJobWebhookName names it in the webhook server's metrics and logs.
	EphemeralJobWebhookName = "ephemeraljob-validate"

	// ReasonInvalidEphemeralContainers: a template container breaks the rules of ephemeral
	// containers, or a count is negative.
	ReasonInvalidEphemeralContainers = "InvalidEphemeralContainers"
	// ReasonRequesterForbidden: the requester may not exec into, or add ephemeral containers
	// to, the namespace's pods (nor any of those the selector matches now).
	ReasonRequesterForbidden = "RequesterForbidden"
)

// ejobPodsAsked bounds how many matching pods admission asks about one by one when the
// requester holds no namespace-wide right (rights given by resourceNames).
const ejobPodsAsked = 10

// EphemeralJobWebhook refuses an EphemeralJob (create, or an update of its spec or requester)
// that OpenKruise's rules refuse, or whose requester may not do, across the namespace or on at
// least one pod the selector matches now, what kubectl exec and kubectl debug need. Stricter
// than OpenKruise, which lets anyone who may create an EphemeralJob reach every pod.
func EphemeralJobWebhook(client kubernetes.Interface) server.Webhook {
	v := &ejobValidator{client: client}
	return server.Webhook{Name: EphemeralJobWebhookName, Path: EphemeralJobPath, Admitter: server.AdmitFunc(v.admit),
		Reasons: []string{ReasonInvalidSelector, ReasonInvalidEphemeralContainers, ReasonRequesterForbidden, ReasonUndecodable}}
}

type ejobValidator struct {
	client kubernetes.Interface
}

func (v *ejobValidator) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != group || req.Resource.Resource != "ephemeraljobs" {
		return server.Allowed()
	}
	job := &appsv1alpha1.EphemeralJob{}
	if err := json.Unmarshal(req.Object.Raw, job); err != nil {
		// Only the schemaless template can fail to decode: the object's fault.
		var named struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &named)
		return invalid(ReasonUndecodable, "EphemeralJob", &named.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec", "template"),
			field.OmitValueType{}, fmt.Sprintf("does not read as ephemeral containers: %v", err))})
	}
	if sel, tmpl := checkEphemeralJob(&job.Spec); len(sel)+len(tmpl) > 0 {
		reason := ReasonInvalidEphemeralContainers
		if len(sel) > 0 {
			reason = ReasonInvalidSelector
		}
		return invalid(reason, "EphemeralJob", &job.ObjectMeta, append(sel, tmpl...))
	}
	return v.requesterMay(ctx, req, job)
}

// requesterMay admits the job if the requesting user may exec into and add ephemeral containers
// to the namespace's pods, or at least to one pod the selector matches now (the controller asks
// again for each pod before it acts). A failed question refuses: this is the requester's gate.
func (v *ejobValidator) requesterMay(ctx context.Context, req *admissionv1.AdmissionRequest, job *appsv1alpha1.EphemeralJob) server.Result {
	ctx, cancel := WithAnswerMargin(ctx)
	defer cancel()
	r := ejobaccess.FromUserInfo(req.UserInfo)
	sars := v.client.AuthorizationV1().SubjectAccessReviews()
	d, err := ejobaccess.Ask(ctx, sars, r, req.Namespace, "")
	if err != nil {
		return server.Errored(err)
	}
	if d.Allowed {
		return server.Allowed()
	}
	sel, _ := metav1.LabelSelectorAsSelector(job.Spec.Selector) // checked above
	pods, err := v.client.CoreV1().Pods(req.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String(), Limit: ejobPodsAsked})
	if err != nil {
		return server.Errored(fmt.Errorf("listing the pods the selector matches: %w", err))
	}
	for _, p := range pods.Items {
		pd, err := ejobaccess.Ask(ctx, sars, r, req.Namespace, p.Name)
		if err != nil {
			return server.Errored(err)
		}
		if pd.Allowed {
			return server.Allowed(fmt.Sprintf("user %q may not reach every pod in namespace %q (denied: %s); "+
				"the EphemeralJob adds containers only to the pods the user may exec into", r.Username, req.Namespace, d.Denied))
		}
	}
	perms := make([]string, 0, len(ejobaccess.Checks))
	for _, c := range ejobaccess.Checks {
		perms = append(perms, c.String())
	}
	return server.Denied(ReasonRequesterForbidden, fmt.Sprintf("EphemeralJob %q: user %q may not %s in namespace %q (denied: %s), "+
		"nor on any of the %d pods the selector matches now: an EphemeralJob acts with its requester's rights",
		displayName(&job.ObjectMeta), r.Username, strings.Join(perms, " and "), req.Namespace, d.Denied, len(pods.Items)))
}
