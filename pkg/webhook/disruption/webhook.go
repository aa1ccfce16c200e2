// Package disruption is the pod validating webhook of PodUnavailableBudgets: it asks the budget
// that covers a pod before the pod is deleted, evicted (pods/eviction, kubectl drain) or, with
// gate PodUnavailableBudgetUpdateGate, updated in a way that makes it unavailable (an image
// change restarts a container; a live resize is RESIZE). What the budget answers is decided and
// charged in one place (pkg/workload/podbudget, reached through the Budget interface); this
// package only says which operation a request is and on which pod.
//
// The API server sends only requests for pods some budget may cover (the matchConditions
// pkg/controller/pubscope writes), never those of kube-system or kruise's namespace (podscope):
// any other pod's delete, eviction or update never waits on kruise.
package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// Path is where the webhook is served: OpenKruise's pod validating path, for vpod.kb.io
	// (pods DELETE, UPDATE; pods/resize UPDATE) and vpodeviction.kb.io (pods/eviction CREATE).
	Path = "/validate-pod"
	// WebhookName names it in the webhook server's metrics and logs.
	WebhookName = "pod-disruption-budget"
)

// Why a request is refused: the rejection metric's reason.
const (
	// ReasonDisruptionBudget: the budget covering the pod has no disruption left now.
	ReasonDisruptionBudget = "DisruptionBudget"
	// ReasonBadRequest: the request's pod or eviction does not decode.
	ReasonBadRequest = "BadRequest"
)

// Budget decides whether op on pod may go ahead now and, when it may, charges the budget that
// covers the pod (unless dryRun). A refusal's reason names the budget and why; err is a failure
// to decide. *podbudget.Admitter implements it.
type Budget interface {
	Admit(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (allowed bool, reason string, err error)
}

// Pods reads the pod an eviction names (a live GET: an eviction carries no pod).
type Pods interface {
	Get(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// Webhook judges pod disruptions against their budget.
type Webhook struct {
	Budget Budget
	Pods   Pods
	// Delete judges deletes and evictions (gate PodUnavailableBudgetDeleteGate); Update judges
	// updates (gate PodUnavailableBudgetUpdateGate). An operation whose gate is off is allowed
	// (the chart does not send it then).
	Delete, Update bool
	// KruiseNamespace's pods, and kube-system's, are never judged (podscope).
	KruiseNamespace string
}

// Webhook is the webhook for the webhook server.
func (w *Webhook) Webhook() server.Webhook {
	return server.Webhook{Name: WebhookName, Path: Path, Admitter: server.AdmitFunc(w.Admit),
		Reasons: []string{ReasonDisruptionBudget, ReasonBadRequest}}
}

// Admit judges a pod DELETE (op DELETE), a pods/eviction CREATE (EVICT) and a pod UPDATE or
// pods/resize UPDATE (UPDATE or RESIZE, Classify); anything else is allowed. A refusal is 429
// TooManyRequests, as the eviction API answers for a PodDisruptionBudget: kubectl drain and other
// eviction clients retry it, and it says "not now" rather than "never".
func (w *Webhook) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if req.Resource.Group != "" || req.Resource.Resource != "pods" {
		return server.Allowed()
	}
	namespace := req.Namespace
	if podscope.Excluded(namespace, w.KruiseNamespace) {
		return server.Allowed()
	}
	dryRun := req.DryRun != nil && *req.DryRun
	var (
		pod *corev1.Pod
		op  policyv1alpha1.PubOperation
		why string
	)
	switch {
	case req.Operation == admissionv1.Delete && req.SubResource == "":
		if !w.Delete {
			return server.Allowed()
		}
		pod = &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, pod); err != nil || len(req.OldObject.Raw) == 0 {
			return badRequest("the pod being deleted", err)
		}
		op, why = policyv1alpha1.PubDeleteOperation, "deleting the pod"
	case req.Operation == admissionv1.Create && req.SubResource == "eviction":
		if !w.Delete {
			return server.Allowed()
		}
		var eviction struct {
			DeleteOptions *metav1.DeleteOptions `json:"deleteOptions,omitempty"`
		}
		if err := json.Unmarshal(req.Object.Raw, &eviction); err != nil {
			return badRequest("the eviction", err)
		}
		if o := eviction.DeleteOptions; o != nil && len(o.DryRun) > 0 {
			dryRun = true // the eviction API honours its deleteOptions' dryRun too
		}
		p, err := w.Pods.Get(ctx, namespace, req.Name)
		if apierrors.IsNotFound(err) {
			return server.Allowed() // the eviction API answers 404 itself
		}
		if err != nil {
			return server.Errored(fmt.Errorf("reading pod %s/%s to judge its eviction: %w", namespace, req.Name, err))
		}
		pod, op, why = p, policyv1alpha1.PubEvictOperation, "evicting the pod"
	case req.Operation == admissionv1.Update && (req.SubResource == "" || req.SubResource == "resize"):
		if !w.Update {
			return server.Allowed()
		}
		old, updated := &corev1.Pod{}, &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return badRequest("the stored pod", err)
		}
		if err := json.Unmarshal(req.Object.Raw, updated); err != nil {
			return badRequest("the updated pod", err)
		}
		change := Classify(old, updated)
		if change.Op == "" {
			return server.Allowed()
		}
		// The budget counts the pod as it is now, before the update.
		pod, op, why = old, change.Op, change.Why
	default:
		return server.Allowed()
	}
	if pod.Namespace == "" {
		pod.Namespace = namespace
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "operation", op, "dryRun", dryRun)
	allowed, reason, err := w.Budget.Admit(ctx, pod, op, dryRun)
	if err != nil {
		return server.Errored(fmt.Errorf("deciding whether %s %s/%s fits its PodUnavailableBudget: %w", op, pod.Namespace, pod.Name, err))
	}
	if !allowed {
		logger.V(2).Info("Refused a pod disruption", "why", why, "reason", reason)
		return server.Result{Reason: ReasonDisruptionBudget, Code: http.StatusTooManyRequests,
			Message: fmt.Sprintf("%s %s/%s (%s) is refused now: %s", op, pod.Namespace, pod.Name, why, reason)}
	}
	logger.V(4).Info("Allowed a pod disruption", "why", why)
	return server.Allowed()
}

func badRequest(what string, err error) server.Result {
	if err == nil {
		err = fmt.Errorf("empty")
	}
	return server.Result{Reason: ReasonBadRequest, Code: http.StatusBadRequest, Message: fmt.Sprintf("decoding %s: %v", what, err)}
}

// LivePods reads pods from the API server.
type LivePods struct {
	Client corev1client.PodsGetter
}

// Get implements Pods.
func (l LivePods) Get(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return l.Client.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}
