package validate

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/crradmit"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// CRRPath is where the ContainerRecreateRequest webhook is served, in
	// OpenKruise's style of paths.
	CRRPath = "/validate-apps-kruise-io-containerrecreaterequest"
	// CRRWebhookName names it in the webhook server's metrics and logs.
	CRRWebhookName = "containerrecreaterequest-validate"
)

// Why a ContainerRecreateRequest is refused (the rejection metric's reason).
const (
	// ReasonPodNotFound: no pod of that name in the request's namespace.
	ReasonPodNotFound = "PodNotFound"
	// ReasonPodTerminating: the pod is being deleted.
	ReasonPodTerminating = crradmit.UnfitPodTerminating
	// ReasonPodFinished: the pod has succeeded or failed.
	ReasonPodFinished = crradmit.UnfitPodFinished
	// ReasonContainerNotFound: a container named is not one of the pod's
	// spec.containers.
	ReasonContainerNotFound = crradmit.UnfitContainerNotFound
)

// CRRWebhook is the ContainerRecreateRequest validating webhook; pods reads
// the request's pod from the API server.
func CRRWebhook(pods corev1client.PodsGetter) server.Webhook {
	return server.Webhook{
		Name:     CRRWebhookName,
		Path:     CRRPath,
		Admitter: &crrValidator{pods: pods},
		Reasons:  []string{ReasonPodNotFound, ReasonPodTerminating, ReasonPodFinished, ReasonContainerNotFound},
	}
}

type crrValidator struct {
	pods corev1client.PodsGetter
}

// Admit refuses a new request whose pod is missing, being deleted or
// finished, or lacks a container it names: what kruise-controller would
// complete it as Failed for at once. A pod still pending is fine: the
// request waits for it (as kubectl apply of a pod and its request does).
func (v *crrValidator) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if !judged(req, "containerrecreaterequests") {
		return server.Allowed()
	}
	crr := &appsv1beta1.ContainerRecreateRequest{}
	if err := decode(req, crr); err != nil {
		return unchecked(ctx, "the ContainerRecreateRequest", err)
	}
	if crr.Spec.PodName == "" {
		return server.Allowed() // the schema refuses it
	}
	podPath := field.NewPath("spec", "podName")
	readCtx, cancel := WithAnswerMargin(ctx)
	defer cancel()
	// Read live, never from a cache: the pod may have been created a moment
	// ago (kubectl apply of a pod and its request in one file).
	pod, err := v.pods.Pods(req.Namespace).Get(readCtx, crr.Spec.PodName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return invalid(ReasonPodNotFound, "ContainerRecreateRequest", &crr.ObjectMeta, field.ErrorList{
			field.Invalid(podPath, crr.Spec.PodName, fmt.Sprintf("%s in namespace %q", crradmit.PodNotFoundMessage(crr.Spec.PodName), req.Namespace)),
		})
	case err != nil:
		// Not an answer about the pod (the API server is slow or refused
		// the read): admitted; kruise-controller reads the pod again.
		return unchecked(ctx, fmt.Sprintf("pod %q", crr.Spec.PodName), fmt.Errorf("reading it: %w", err))
	}
	names := make([]string, 0, len(crr.Spec.Containers))
	for _, c := range crr.Spec.Containers {
		names = append(names, c.Name)
	}
	u := crradmit.CheckPod(pod, names)
	if u == nil {
		return server.Allowed()
	}
	var errs field.ErrorList
	if u.Kind == crradmit.UnfitContainerNotFound {
		for i, c := range crr.Spec.Containers {
			if msg, ok := u.PerContainer[c.Name]; ok {
				errs = append(errs, field.Invalid(field.NewPath("spec", "containers").Index(i).Child("name"), c.Name, msg))
			}
		}
	} else {
		errs = field.ErrorList{field.Invalid(podPath, crr.Spec.PodName, u.Message)}
	}
	return invalid(u.Kind, "ContainerRecreateRequest", &crr.ObjectMeta, errs)
}
