package inplace

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
)

// Event reasons a workload records on itself for a pod updated in place.
const (
	EventReasonSucceeded = "SuccessfulUpdatePodInPlace"
	EventReasonFailed    = "FailedUpdatePodInPlace"
)

// Outcome is what an Updater call did.
type Outcome string

const (
	// OutcomeNothing: nothing written, nothing awaited.
	OutcomeNothing Outcome = ""
	// OutcomeWaiting: nothing written; the update waits (Result.Waiting says for what).
	OutcomeWaiting Outcome = "Waiting"
	// OutcomeStarted: the update was written, with its first batch.
	OutcomeStarted Outcome = "Started"
	// OutcomeGraceStarted: the update was recorded and waits out its grace period.
	OutcomeGraceStarted Outcome = "GraceStarted"
	// OutcomeGraceFinished: the grace period was over and the first batch was written.
	OutcomeGraceFinished Outcome = "GraceFinished"
	// OutcomeNextBatch: a later batch was written.
	OutcomeNextBatch Outcome = "NextBatch"
	// OutcomeMarkedReady: InPlaceUpdateReady was set True, the update being done.
	OutcomeMarkedReady Outcome = "MarkedReady"
	// OutcomeGateReleased: InPlaceUpdateReady was set True while the kubelet replaces the last
	// batch's containers (reason ContainersRestarting); the update is not done yet.
	OutcomeGateReleased Outcome = "GateReleased"
	// OutcomeGateHeld: InPlaceUpdateReady was set False again after a release, the kubelet having
	// reported the pod Ready on a container the update replaces.
	OutcomeGateHeld Outcome = "GateHeld"
	// OutcomeNotReadyRestated: Ready was set False again on a pod whose gate is False, the kubelet
	// having written back an earlier Ready=True.
	OutcomeNotReadyRestated Outcome = "NotReadyRestated"
	// OutcomeBudgetWait: nothing written; a PodUnavailableBudget does not let the pod go now
	// (Result.Budget says which and why). The workload looks again after Result.RequeueAfter.
	OutcomeBudgetWait Outcome = "BudgetWait"
	// OutcomeUnreadable: nothing written; the pod's in-place update annotations do not decode
	// (Result.Err is the *AnnotationError). The workload leaves the pod as it is and reports it
	// (ReportUnreadable) rather than failing its pass.
	OutcomeUnreadable Outcome = "Unreadable"
)

// Result is what an Updater call did, for the workload's Events, metrics and requeueing.
type Result struct {
	Outcome Outcome
	// Containers is the batch written, if any.
	Containers []string
	// Pod is the pod as last written; nil when nothing was written.
	Pod *corev1.Pod
	// Waiting says what the update waits for (OutcomeWaiting).
	Waiting string
	// RequeueAfter, when positive, is when to refresh the pod again.
	RequeueAfter time.Duration
	// Budget is the wait of OutcomeBudgetWait.
	Budget *budgetwait.Wait
	// Err is why the call failed; the other fields say what was done before.
	Err error
}

// Updater carries out in-place updates on the API server. What to write is decided by the pure
// functions of this package (Plan, Start, Decide, FinishGrace, NextBatch); the Updater reads the
// pod again before each write and retries a write that conflicts, deciding again on the pod it
// read.
type Updater struct {
	pods    PodClient
	clock   clock.PassiveClock
	backoff wait.Backoff
	// budget is asked before an update starts (WithBudget).
	budget budgetwait.Check
}

// NewUpdater is an Updater on a clientset, with the real clock and client-go's default retry.
func NewUpdater(client kubernetes.Interface) *Updater {
	return NewUpdaterFor(NewPodClient(client), clock.RealClock{}, retry.DefaultRetry)
}

// NewUpdaterFor is an Updater on pods, reading time from clk and retrying conflicts by backoff.
func NewUpdaterFor(pods PodClient, clk clock.PassiveClock, backoff wait.Backoff) *Updater {
	return &Updater{pods: pods, clock: clk, backoff: backoff}
}

// WithBudget makes u ask check before it starts an update (budgetwait.Check.Admit); it returns u.
func (u *Updater) WithBudget(check budgetwait.Check) *Updater {
	u.budget = check
	return u
}

// Update starts the in-place update of pod to target by spec (from Plan). When the pod declares
// the InPlaceUpdateReady readiness gate and the update restarts containers or waits a grace
// period, the condition is set False first; then the resize, if any, and the pod update are
// written, with the first batch or the grace record.
//
// Before anything, the PodUnavailableBudget is asked (WithBudget) with the update's Operation,
// while the pod is still ready: a refusal writes nothing and is OutcomeBudgetWait, as is the pod
// webhook's refusal of the write itself (a budget it saw first).
//
// pod may come from a cache: every write carries its resourceVersion, so a stale copy fails with
// a conflict and only then is the pod read again. In the usual case the update costs two writes
// and no read.
func (u *Updater) Update(ctx context.Context, pod *corev1.Pod, spec *Spec, target Target, graceSeconds int32) Result {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "revision", target.Revision)
	op := spec.Operation(pod, graceSeconds)
	if w := u.budget.Admit(ctx, pod, op); w != nil {
		return Result{Outcome: OutcomeBudgetWait, Waiting: w.Reason, Budget: w, RequeueAfter: budgetwait.RetryAfter}
	}
	now := u.clock.Now()
	base := pod
	var marked *corev1.Pod
	if DeclaresReadinessGate(pod) && (graceSeconds > 0 || spec.RestartsContainers(pod)) {
		var err error
		if marked, err = u.markNotReady(ctx, pod, now, graceSeconds <= 0); err != nil {
			return Result{Err: err}
		}
		base = marked
	}
	var step *Step
	var written *corev1.Pod
	err := retry.RetryOnConflict(u.backoff, func() error {
		cur, err := u.current(ctx, pod, base)
		base = nil // a conflict means the copy was stale: read the pod on the next try
		if err != nil {
			return err
		}
		if step, err = Start(cur, spec, target, graceSeconds, now); err != nil {
			return err
		}
		written, err = u.write(ctx, step)
		return err
	})
	if err != nil {
		if reason, refused := budgetwait.Refused(err); refused {
			// A pod marked not ready stays so until Refresh marks it ready again, no update
			// being under way.
			w := &budgetwait.Wait{Namespace: pod.Namespace, Pod: pod.Name, Op: op, Reason: reason}
			return Result{Outcome: OutcomeBudgetWait, Pod: marked, Waiting: reason, Budget: w, RequeueAfter: budgetwait.RetryAfter}
		}
		return Result{Err: err}
	}
	if step.Grace {
		logger.Info("Started in-place update grace period", "graceSeconds", graceSeconds)
		return Result{Outcome: OutcomeGraceStarted, Pod: written, RequeueAfter: time.Duration(graceSeconds) * time.Second}
	}
	logger.Info("Started in-place update", "containers", step.Containers, "resized", sortedKeys(step.Resize))
	return Result{Outcome: OutcomeStarted, Pod: written, Containers: step.Containers}
}

// current is cached when there is one, else pod as the API server has it now.
func (u *Updater) current(ctx context.Context, pod, cached *corev1.Pod) (*corev1.Pod, error) {
	if cached != nil {
		return cached, nil
	}
	fresh, err := u.pods.GetPod(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return nil, fmt.Errorf("reading pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return fresh, nil
}

// Refresh moves the pod's update on: it ends a grace period that is over, writes the next batch
// once the current one is done and ready, releases the gate while the kubelet replaces the last
// batch's images, and sets InPlaceUpdateReady=True once all is done.
// The True condition is written only for the pod as given, whose completion was checked: a
// conflict is returned, not retried. A pod whose update annotations do not decode gets
// OutcomeUnreadable, and nothing is written.
func (u *Updater) Refresh(ctx context.Context, pod *corev1.Pod) Result {
	if ae := Unreadable(pod); ae != nil {
		return Result{Outcome: OutcomeUnreadable, Err: ae}
	}
	res := u.refresh(ctx, pod)
	if ae, ok := AsAnnotationError(res.Err); ok {
		return Result{Outcome: OutcomeUnreadable, Err: ae} // the pod as read again, written meanwhile
	}
	return res
}

func (u *Updater) refresh(ctx context.Context, pod *corev1.Pod) Result {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	now := u.clock.Now()
	d, err := Decide(pod, now)
	if err != nil {
		return Result{Err: err}
	}
	switch d.Action {
	case ActionNone:
		if d.Waiting == "" {
			return Result{}
		}
		return Result{Outcome: OutcomeWaiting, Waiting: d.Waiting, RequeueAfter: d.RequeueAfter}
	case ActionMarkReady:
		patch, err := ReadyStatusPatch(pod, now)
		return u.writeGate(ctx, pod, patch, err, OutcomeMarkedReady, "marking pod %s/%s ready after its in-place update")
	case ActionReleaseGate:
		patch, err := ReleaseStatusPatch(pod, now)
		return u.writeGate(ctx, pod, patch, err, OutcomeGateReleased, "releasing the readiness gate of pod %s/%s while the kubelet restarts its containers")
	case ActionHoldGate:
		patch, err := HoldStatusPatch(pod, now)
		res := u.writeGate(ctx, pod, patch, err, OutcomeGateHeld, "holding the readiness gate of pod %s/%s, Ready on a container its update replaces")
		if res.Err == nil {
			logger.Info("Pod turned Ready on a container its in-place update replaces; readiness gate held until the update is done")
		}
		return res
	case ActionRestateNotReady:
		patch, err := RestateNotReadyStatusPatch(pod, now)
		return u.writeGate(ctx, pod, patch, err, OutcomeNotReadyRestated, "setting pod %s/%s not Ready again during its in-place update")
	}

	result := Result{Outcome: OutcomeNextBatch}
	if d.Action == ActionFinishGrace {
		result.Outcome = OutcomeGraceFinished
	}
	err = retry.RetryOnConflict(u.backoff, func() error {
		fresh, err := u.pods.GetPod(ctx, pod.Namespace, pod.Name)
		if err != nil {
			return fmt.Errorf("reading pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		again, err := Decide(fresh, now)
		if err != nil {
			return err
		}
		if again.Action != d.Action {
			// The pod moved on under us (another writer, or a new update).
			result = Result{Outcome: OutcomeWaiting, Waiting: again.Waiting, RequeueAfter: again.RequeueAfter}
			return nil
		}
		var step *Step
		if d.Action == ActionFinishGrace {
			step, err = FinishGrace(fresh, now)
		} else {
			step, err = NextBatch(fresh, now)
		}
		if err != nil {
			return err
		}
		result.Containers = step.Containers
		result.Pod, err = u.write(ctx, step)
		return err
	})
	if err != nil {
		return Result{Err: err}
	}
	if result.Pod != nil {
		logger.Info("Wrote in-place update batch", "step", result.Outcome, "containers", result.Containers)
	}
	return result
}

// writeGate writes a status patch of the InPlaceUpdateReady condition (built with buildErr), for
// the pod as given: a conflict is returned, not retried. what names the write in an error, with
// the pod's namespace and name.
func (u *Updater) writeGate(ctx context.Context, pod *corev1.Pod, patch []byte, buildErr error, outcome Outcome, what string) Result {
	if buildErr != nil {
		return Result{Err: buildErr}
	}
	written, err := u.pods.PatchPodStatus(ctx, pod.Namespace, pod.Name, patch)
	if err != nil {
		return Result{Err: fmt.Errorf(what+": %w", pod.Namespace, pod.Name, err)}
	}
	klog.FromContext(ctx).V(2).Info("Wrote in-place update readiness gate", "pod", klog.KObj(pod), "outcome", outcome)
	return Result{Outcome: outcome, Pod: written}
}

// markNotReady sets InPlaceUpdateReady=False (and Ready=False) and returns the pod as written;
// specFollows says the spec update is written right after (NotReadyStatusPatch).
// The patch carries the resourceVersion of the pod it was computed on: a condition a cached copy
// shows False may have been set True since, so a conflict reads the pod and decides again.
func (u *Updater) markNotReady(ctx context.Context, pod *corev1.Pod, now time.Time, specFollows bool) (*corev1.Pod, error) {
	base := pod
	var written *corev1.Pod
	err := retry.RetryOnConflict(u.backoff, func() error {
		cur, err := u.current(ctx, pod, base)
		base = nil
		if err != nil {
			return err
		}
		patch, err := NotReadyStatusPatch(cur, now, specFollows)
		if err != nil {
			return err
		}
		written, err = u.pods.PatchPodStatus(ctx, pod.Namespace, pod.Name, patch)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("marking pod %s/%s not ready for its in-place update: %w", pod.Namespace, pod.Name, err)
	}
	return written, nil
}

// write carries out a step: the resize first, so that a failure between the two writes leaves
// no state claiming a resize that was never asked for (the step is computed again and the
// resize, asked again, changes nothing), then the pod update on the version the resize returned.
func (u *Updater) write(ctx context.Context, step *Step) (*corev1.Pod, error) {
	pod := step.Pod
	if len(step.Resize) > 0 {
		patch, err := resizePatch(pod, step.Resize)
		if err != nil {
			return nil, err
		}
		resized, err := u.pods.ResizePod(ctx, pod.Namespace, pod.Name, patch)
		if err != nil {
			return nil, fmt.Errorf("resizing containers %v of pod %s/%s: %w", sortedKeys(step.Resize), pod.Namespace, pod.Name, err)
		}
		// The update must carry the resources as resized: any other value is a resize too,
		// which the API server refuses on an update.
		pod.ResourceVersion = resized.ResourceVersion
		for i := range pod.Spec.Containers {
			if c := containerOf(resized, pod.Spec.Containers[i].Name); c != nil {
				pod.Spec.Containers[i].Resources = c.Resources
			}
		}
	}
	written, err := u.pods.UpdatePod(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("updating pod %s/%s in place: %w", pod.Namespace, pod.Name, err)
	}
	return written, nil
}
