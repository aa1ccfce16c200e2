package budgetwait

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// EventReason is the reason of the Event a workload gets when its pods wait for a budget.
const EventReason = "PodUnavailableBudgetWait"

// Reasons of the workloads' condition PodUnavailableBudgetWait.
const (
	// ConditionReasonRefused: a budget refused to let a pod go now.
	ConditionReasonRefused = "Refused"
	// ConditionReasonCheckFailed: the budget could not be checked.
	ConditionReasonCheckFailed = "CheckFailed"
)

// maxNamed bounds the pods a message names.
const maxNamed = 5

// Reporter says, per workload, that its pods wait for a budget: an Event and a log line when
// the reasons change, none while a wait merely goes on. Safe for concurrent use.
type Reporter struct {
	mu sync.Mutex
	// last holds, per workload key, the reasons last reported.
	last map[string]string
}

// NewReporter is a Reporter that has reported nothing.
func NewReporter() *Reporter { return &Reporter{last: map[string]string{}} }

// Report records the waits of a pass of the workload obj (queue key key) that got as far as
// consulting the budget: an Event when the reasons differ from the last reported. No waits ends
// the workload's wait, so the next one is reported again.
func (r *Reporter) Report(ctx context.Context, rec record.EventRecorder, obj runtime.Object, key string, waits []Wait) {
	sig := signature(waits)
	r.mu.Lock()
	changed := r.last[key] != sig
	if sig == "" {
		delete(r.last, key)
	} else {
		r.last[key] = sig
	}
	r.mu.Unlock()
	if !changed || sig == "" {
		return
	}
	msg := Message(waits)
	kind := corev1.EventTypeNormal
	if ConditionReason(waits) == ConditionReasonCheckFailed {
		kind = corev1.EventTypeWarning
	}
	klog.FromContext(ctx).Info("Pods wait for their PodUnavailableBudget", "count", len(waits), "waits", msg)
	rec.Event(obj, kind, EventReason, msg)
}

// Forget drops what r keeps of a workload that is gone.
func (r *Reporter) Forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, key)
}

// signature is the distinct reasons of waits, sorted: what a new Event needs to differ in.
func signature(waits []Wait) string {
	var reasons []string
	for _, w := range waits {
		reasons = append(reasons, string(w.Op)+" "+w.Reason)
	}
	slices.Sort(reasons)
	return strings.Join(slices.Compact(reasons), "\n")
}

// Message says which pods wait and why, for an Event or a condition; "" for no waits.
func Message(waits []Wait) string {
	if len(waits) == 0 {
		return ""
	}
	sorted := slices.Clone(waits)
	slices.SortFunc(sorted, func(a, b Wait) int {
		return strings.Compare(a.Namespace+"/"+a.Pod, b.Namespace+"/"+b.Pod)
	})
	var parts []string
	for _, w := range sorted[:min(len(sorted), maxNamed)] {
		parts = append(parts, fmt.Sprintf("pod %s waits (%s): %s", w.Pod, w.Op, w.Reason))
	}
	if n := len(sorted) - maxNamed; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, "; ")
}

// ConditionReason is the reason of the workload's condition for waits: CheckFailed when some
// budget could not be checked, else Refused.
func ConditionReason(waits []Wait) string {
	for _, w := range waits {
		if w.Failed {
			return ConditionReasonCheckFailed
		}
	}
	return ConditionReasonRefused
}
