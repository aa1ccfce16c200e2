package budgetwait

import (
	"errors"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// webhookDenied is how the API server words a validating webhook's refusal
// (`admission webhook "<name>" denied the request: <message>`).
const (
	webhookPrefix = `admission webhook "`
	webhookDenied = "denied the request: "
)

// Refused reports whether err is a pod webhook's refusal for a PodUnavailableBudget: a Forbidden
// or TooManyRequests status (or BadRequest, what the API server makes of a denial that gives no
// code) whose message is an admission webhook's and names the budget. reason is the webhook's
// message.
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
	if !strings.HasPrefix(msg, webhookPrefix) || !strings.Contains(msg, "PodUnavailableBudget") {
		return "", false
	}
	if i := strings.Index(msg, webhookDenied); i >= 0 {
		msg = msg[i+len(webhookDenied):]
	}
	return msg, true
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
