package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/process/durations"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// Refresher is the in-place updater's Refresh (inplace.Updater).
type Refresher interface {
	Refresh(ctx context.Context, pod *corev1.Pod) inplace.Result
}

// RefreshPass moves every pod of a workload that orders its pods by lifecycle state (CloneSet,
// Advanced StatefulSet) on: its in-place update (next batch, InPlaceUpdateReady) and then its
// lifecycle state (AfterRefresh).
type RefreshPass struct {
	Updater Refresher
	// States writes the lifecycle states; UpdateRevision is the workload's update revision.
	States         Writer
	UpdateRevision string
	// A pod whose in-place update annotations do not decode is left as it is and reported as
	// an Event on Owner (inplace.ReportUnreadable), not an error of the pass.
	Recorder record.EventRecorder
	Owner    runtime.Object
	// Refreshed, when set, is told of every pod as its refresh wrote it.
	Refreshed func(metav1.Object)
	// Ready, when set, is told how long each in-place update that just turned ready took (from
	// the start its state records, by States.Clock).
	Ready func(took time.Duration)
}

// Run refreshes pods. It reports whether it wrote anything (or a write failed, so that the
// pass looks again), and when to look again for an update that waits (0: none).
func (r RefreshPass) Run(ctx context.Context, pods []*corev1.Pod) (bool, time.Duration, error) {
	logger := klog.FromContext(ctx)
	acted := false
	var after time.Duration
	var errs []string
	for _, pod := range pods {
		started := time.Time{}
		if r.Ready != nil {
			if st, err := inplace.ReadState(pod); err == nil && st != nil {
				started = st.UpdateTimestamp.Time
			}
		}
		res := r.Updater.Refresh(ctx, pod)
		if res.Pod != nil && r.Refreshed != nil {
			r.Refreshed(res.Pod)
		}
		if res.Outcome == inplace.OutcomeUnreadable {
			inplace.ReportUnreadable(ctx, r.Recorder, r.Owner, pod, res.Err)
			continue
		}
		if res.Err != nil {
			if !apierrors.IsConflict(res.Err) && !apierrors.IsNotFound(res.Err) {
				errs = append(errs, fmt.Sprintf("pod %s: %v", pod.Name, res.Err))
			}
			acted = true
			continue
		}
		switch res.Outcome {
		case inplace.OutcomeMarkedReady:
			if r.Ready != nil && !started.IsZero() {
				r.Ready(r.States.Clock.Since(started))
			}
			acted = true
			// The lifecycle state follows at once, on the pod as written, as its own pass would:
			// the kubelet then takes both changes in one sync instead of two, each of which can
			// wait a PLEG relist before the pod turns Ready.
			pod = res.Pod
		case inplace.OutcomeNextBatch, inplace.OutcomeGraceFinished, inplace.OutcomeGateReleased, inplace.OutcomeGateHeld, inplace.OutcomeNotReadyRestated:
			logger.V(2).Info("In-place update moved on", "pod", klog.KObj(pod), "outcome", res.Outcome, "containers", res.Containers)
			acted = true
			continue
		case inplace.OutcomeWaiting:
			after = durations.Shortest(after, res.RequeueAfter)
		}
		wrote, err := r.States.AfterRefresh(ctx, pod, res.Outcome, r.UpdateRevision)
		acted = acted || wrote
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return acted, after, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return acted, after, nil
}
