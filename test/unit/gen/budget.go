package gen

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// BudgetCall is one question a Budget was asked.
type BudgetCall struct {
	Pod    string
	Op     policyv1alpha1.PubOperation
	DryRun bool
}

// Budget is a fake PodUnavailableBudget for the workloads' budget checks (budgetwait.Budget): it
// records every question and answers with Allow, else refuses with Reason, or fails with Err.
type Budget struct {
	mu    sync.Mutex
	calls []BudgetCall
	// Allow, when set, decides by pod name; nil refuses everything.
	Allow func(pod string) bool
	// Reason is the refusal's reason.
	Reason string
	// Err, when set, is returned instead of an answer.
	Err error
}

// AllowingBudget lets every disruption through.
func AllowingBudget() *Budget { return &Budget{Allow: func(string) bool { return true }} }

// RefusingBudget refuses every disruption with reason.
func RefusingBudget(reason string) *Budget { return &Budget{Reason: reason} }

// Admit implements budgetwait.Budget.
func (b *Budget) Admit(_ context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (bool, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, BudgetCall{Pod: pod.Name, Op: op, DryRun: dryRun})
	if b.Err != nil {
		return false, "", b.Err
	}
	if b.Allow != nil && b.Allow(pod.Name) {
		return true, "", nil
	}
	return false, b.Reason, nil
}

// Calls are the questions asked so far.
func (b *Budget) Calls() []BudgetCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]BudgetCall(nil), b.calls...)
}

// BudgetRefusal is the error client-go returns when the pod webhook refuses a write for a
// budget: the API server's wording of a validating webhook's denial (403, the message prefixed
// with the webhook's name).
func BudgetRefusal(reason string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: fmt.Sprintf("admission webhook %q denied the request: %s", "vpod.kruise.io", reason),
	}}
}
