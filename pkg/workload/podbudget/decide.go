package podbudget

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// Verdict is what Decide says of a disruption.
type Verdict int

const (
	// Free: the disruption may go ahead without a charge.
	Free Verdict = iota
	// Charge: it may go ahead once Decision.Status is written.
	Charge
	// Refuse: the budget has no room.
	Refuse
)

// Decision is the outcome of Decide.
type Decision struct {
	Verdict Verdict
	// Status is the budget's status with the pod charged (Verdict Charge).
	Status *policyv1alpha1.PodUnavailableBudgetStatus
	// Reason explains a refusal, naming the budget.
	Reason string
}

// Decide says whether budget b lets op disrupt the available pod podName, counted under
// workload w when b applies per workload, at now. Disruptions are free when nothing is to be
// kept available or the pod is already recorded; refused while the status counts an older
// generation of the spec; otherwise the pod is charged (recorded in
// disruptedPods for DELETE, EVICT and RESIZE, unavailablePods for UPDATE, and
// unavailableAllowed decremented) if there is room. The caller has checked that b guards op and
// that the pod counts as available.
func Decide(b *policyv1alpha1.PodUnavailableBudget, podName string, w Workload, op policyv1alpha1.PubOperation, now time.Time) Decision {
	st := &b.Status
	if _, ok := st.DisruptedPods[podName]; ok {
		return Decision{Verdict: Free}
	}
	if _, ok := st.UnavailablePods[podName]; ok {
		return Decision{Verdict: Free}
	}
	desired, current, allowed, total := st.DesiredAvailable, st.CurrentAvailable, st.UnavailableAllowed, st.TotalReplicas
	idx := -1
	if PerWorkload(b) {
		for i := range st.Workloads {
			if st.Workloads[i].Kind == w.Kind && st.Workloads[i].Name == w.Name {
				idx = i
				break
			}
		}
		if idx < 0 {
			return Decision{Verdict: Refuse, Reason: fmt.Sprintf("%s: its status has no numbers for %s yet", budgetName(b), w)}
		}
		wb := st.Workloads[idx]
		desired, current, allowed, total = wb.DesiredAvailable, wb.CurrentAvailable, wb.UnavailableAllowed, wb.TotalReplicas
	}
	if desired <= 0 {
		return Decision{Verdict: Free}
	}
	if st.ObservedGeneration > 0 && st.ObservedGeneration < b.Generation {
		// The spec changed since the numbers were counted (a tighter maxUnavailable would not be
		// in them yet): wait for the controller's count.
		return Decision{Verdict: Refuse, Reason: fmt.Sprintf("%s: its spec changed (generation %d) since its status was counted (generation %d); try again shortly",
			budgetName(b), b.Generation, st.ObservedGeneration)}
	}
	if len(st.DisruptedPods)+len(st.UnavailablePods) >= MaxRecorded {
		return Decision{Verdict: Refuse, Reason: fmt.Sprintf("%s: %d disruptions are already under way, the most it records", budgetName(b), MaxRecorded)}
	}
	if allowed <= 0 {
		return Decision{Verdict: Refuse, Reason: refusal(b, w, idx >= 0, total, current, desired, allowed)}
	}
	out := st.DeepCopy()
	at := metav1.NewTime(now)
	if op == policyv1alpha1.PubUpdateOperation {
		if out.UnavailablePods == nil {
			out.UnavailablePods = map[string]metav1.Time{}
		}
		out.UnavailablePods[podName] = at
	} else {
		if out.DisruptedPods == nil {
			out.DisruptedPods = map[string]metav1.Time{}
		}
		out.DisruptedPods[podName] = at
	}
	out.UnavailableAllowed = max(0, out.UnavailableAllowed-1)
	if idx >= 0 {
		out.Workloads[idx].UnavailableAllowed--
	}
	return Decision{Verdict: Charge, Status: out}
}

func budgetName(b *policyv1alpha1.PodUnavailableBudget) string {
	return fmt.Sprintf("PodUnavailableBudget %s/%s", b.Namespace, b.Name)
}

// refusal is the reason of a refusal for want of room.
func refusal(b *policyv1alpha1.PodUnavailableBudget, w Workload, perWorkload bool, total, current, desired, allowed int32) string {
	of := ""
	if perWorkload {
		of = " of " + w.String()
	}
	var limit string
	switch {
	case b.Spec.MaxUnavailable != nil:
		// Unavailable now, or charged since the controller last counted (allowed was decremented,
		// current not yet).
		unavailable := max(0, total-current, total-desired-max(0, allowed))
		limit = fmt.Sprintf("%d unavailable%s of maxUnavailable %s", unavailable, of, b.Spec.MaxUnavailable.String())
	case b.Spec.MinAvailable != nil:
		limit = fmt.Sprintf("minAvailable %s%s", b.Spec.MinAvailable.String(), of)
	}
	return fmt.Sprintf("%s: no more unavailable pods allowed (%s; current available %d, desired %d)", budgetName(b), limit, current, desired)
}
