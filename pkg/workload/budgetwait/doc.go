// Package budgetwait is a workload's side of the PodUnavailableBudget: CloneSet, Advanced
// StatefulSet, Advanced DaemonSet and SidecarSet consult the budget before they disrupt a pod and,
// when it says no, leave the pod for now and look again shortly, instead of failing half-way on
// the pod webhook's refusal.
//
//   - Budget is the one method a workload needs of the budget (kruise-controller wires
//     podbudget's Admitter; nil means no budgets). Check.Admit asks it before an in-place update,
//     when gate PodUnavailableBudgetUpdateGate is on (Check.InPlace), with the operation the
//     engine reads from the update (inplace.Spec.Operation: RESIZE for a live cpu or memory
//     change, else UPDATE). An allowed answer has charged the budget already, so the pod webhook
//     then lets the write through.
//   - Refused reads a pod deletion the pod webhook turned down for a budget (scale-in, recreate,
//     specified-delete): a wait too, not an error retried with a growing backoff.
//   - Waits collects a pass's waits; Reporter says so once per change of reason, an Event on the
//     workload (EventReason) and Message for its status condition; RetryAfter is when the
//     workload looks again.
package budgetwait
