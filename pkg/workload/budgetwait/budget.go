package budgetwait

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// RetryAfter is when a workload whose pod waits for a budget looks again: soon enough that a
// rollout follows the budget closely, far enough apart that a budget at zero costs the API server
// a request per waiting pod every two seconds at most, never a hot loop.
const RetryAfter = 2 * time.Second

// Budget is the PodUnavailableBudget as a workload consults it (podbudget's Admitter). Admit
// decides whether op on pod may go ahead now and, when it may and a budget covers the pod,
// charges the budget for it first. reason, on a refusal, names the budget and why; err is a
// failure to decide.
type Budget interface {
	Admit(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (allowed bool, reason string, err error)
}

// Check is how a workload consults the budget. The zero Check asks nothing.
type Check struct {
	// Budget charges the budgets; nil: there are none to ask.
	Budget Budget
	// InPlace (gate PodUnavailableBudgetUpdateGate) makes in-place updates ask the budget first.
	InPlace bool
}

// Wait is a pod left undisrupted this round because of a budget.
type Wait struct {
	// Pod is the pod's name; Namespace its namespace.
	Namespace, Pod string
	// Op is what was held back (UPDATE, RESIZE, DELETE).
	Op policyv1alpha1.PubOperation
	// Reason is the budget's reason, or the failure to decide.
	Reason string
	// Failed: the budget could not decide (the pod waits all the same).
	Failed bool
}

// Admit asks the budget whether the in-place update op of pod may start now. nil: go ahead (the
// budget is not asked when there is none, the gate is off or op is empty, an update that takes
// nothing away from the pod). A refusal or a failure to decide is the Wait to report.
func (c Check) Admit(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation) *Wait {
	if c.Budget == nil || !c.InPlace || op == "" {
		return nil
	}
	allowed, reason, err := c.Budget.Admit(ctx, pod, op, false)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The PodUnavailableBudget could not decide; the pod waits", "pod", klog.KObj(pod), "op", op, "err", err)
		return &Wait{Namespace: pod.Namespace, Pod: pod.Name, Op: op, Failed: true,
			Reason: fmt.Sprintf("the PodUnavailableBudget could not be checked: %v", err)}
	}
	if !allowed {
		return &Wait{Namespace: pod.Namespace, Pod: pod.Name, Op: op, Reason: reason}
	}
	return nil
}

// Waits collects the waits of one pass; safe for concurrent use (a step's pods are updated side
// by side). The zero value is ready.
type Waits struct {
	mu   sync.Mutex
	list []Wait
}

// Add records w.
func (w *Waits) Add(x Wait) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, x)
}

// List returns the waits recorded.
func (w *Waits) List() []Wait {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Wait(nil), w.list...)
}

// Len is how many waits were recorded.
func (w *Waits) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.list)
}
