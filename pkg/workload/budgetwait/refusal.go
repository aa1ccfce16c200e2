package budgetwait

import (
	"errors"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// webhookPrefix begins the API server's wording of a validating webhook's refusal
// (`admission webhook "<name>" denied the request: <message>`); budgetWord is in the message of
// a refusal for a budget.
const (
	webhookPrefix = `admission webhook "`
	budgetWord    = "PodUnavailableBudget"
)

// Refused reports whether err is a pod webhook's refusal for a PodUnavailableBudget: a Forbidden
// or TooManyRequests status (or BadRequest, what the API server makes of a denial that gives no
// code) whose message is an admission webhook's and names the budget. reason is the message from
// the budget's name on.
func Refused(err error) (reason string, ok bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return "", false
	}
	st := status.Status()
	switch st.Code {
	case http.StatusForbidden, http.StatusTooManyRequests, http.StatusBadRequest:
	default:
		return "", false
	}
	msg := st.Message
	if !strings.HasPrefix(msg, webhookPrefix) || !strings.Contains(msg, budgetWord) {
		return "", false
	}
	// From the budget's own reason on ("PodUnavailableBudget <ns>/<name>: ..."), as Check.Admit
	// has it: what the webhook wraps around it says nothing the wait does not.
	return msg[strings.Index(msg, budgetWord):], true
}

// Deletion is the wait of pod whose deletion failed with err, when a budget refused it; nil for
// any other error.
func Deletion(pod *corev1.Pod, err error) *Wait {
	reason, ok := Refused(err)
	if !ok {
		return nil
	}
	return &Wait{Namespace: pod.Namespace, Pod: pod.Name, Op: policyv1alpha1.PubDeleteOperation, Reason: reason}
}
