package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// Writer writes the lifecycle states Decide hands out onto one workload's pods: the only part
// of the package that talks to the API server, so that every workload writes them the same way.
type Writer struct {
	Client kubernetes.Interface
	Clock  clock.PassiveClock
	// Lifecycle is the workload's spec.lifecycle (nil: no hooks).
	Lifecycle *pub.Lifecycle
	// Wrote, when set, is told of every pod as written, for a controller that holds back its
	// next write of a pod until its cache shows this one.
	Wrote func(metav1.Object)
}

// StateWrite is what SetState did with the state label.
type StateWrite int

const (
	// StateUnchanged: the pod already had the state, or a write failed.
	StateUnchanged StateWrite = iota
	// StateWritten: the pod now carries the state.
	StateWritten
	// PodGone: the pod was deleted before the state reached it.
	PodGone
)

// SetState writes decision d's state on pod: the KruisePodReady condition first (so the pod
// leaves its Services before a hook's owner sees the state), then the state label.
func (w Writer) SetState(ctx context.Context, pod *corev1.Pod, d Decision) (StateWrite, error) {
	if err := w.PatchReadiness(ctx, pod, d.State); err != nil {
		return StateUnchanged, err
	}
	patch, err := d.Patch(pod, w.Clock)
	if err != nil || patch == nil {
		return StateUnchanged, err
	}
	out, err := w.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return PodGone, nil
	}
	if err != nil {
		return StateUnchanged, fmt.Errorf("setting lifecycle state %s on pod %s: %w", d.State, pod.Name, err)
	}
	w.wrote(out)
	klog.FromContext(ctx).V(2).Info("Set lifecycle state", "pod", klog.KObj(pod), "state", d.State, "reason", d.Reason)
	return StateWritten, nil
}

// PatchReadiness gives the pod the KruisePodReady condition state asks for, if it does not have
// it (ReadinessPatch).
func (w Writer) PatchReadiness(ctx context.Context, pod *corev1.Pod, state pub.LifecycleStateType) error {
	patch, err := ReadinessPatch(pod, w.Lifecycle, state, w.Clock)
	if err != nil || patch == nil {
		return err
	}
	out, err := w.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the KruisePodReady condition of pod %s: %w", pod.Name, err)
	}
	w.wrote(out)
	return nil
}

func (w Writer) wrote(pod *corev1.Pod) {
	if w.Wrote != nil {
		w.Wrote(pod)
	}
}

// AfterRefresh moves pod's lifecycle state on once its in-place refresh (inplace.Updater.Refresh)
// has ended with outcome and left the pod to the lifecycle: Updating turns Updated or Normal
// when the update is applied in full, PreparingNormal turns Normal when its hook lets it, and a
// pod staying where it is keeps the readiness its state asks for. updateRevision is the
// workload's update revision. It reports whether it changed the state.
func (w Writer) AfterRefresh(ctx context.Context, pod *corev1.Pod, outcome inplace.Outcome, updateRevision string) (bool, error) {
	want := WantNothing
	if StateOf(pod) == pub.LifecycleStateUpdating {
		// An update is finished only by a pass that found nothing more to do for it, or that
		// just marked it ready.
		if done, _, err := inplace.UpdateDone(pod); err == nil && done &&
			(outcome == inplace.OutcomeNothing || outcome == inplace.OutcomeMarkedReady) {
			want = WantUpdateFinished
		}
	}
	dec := Decide(Input{Pod: pod, Lifecycle: w.Lifecycle, Want: want,
		AtTargetRevision: revision.PodAt(pod, updateRevision)})
	if dec.Action == ActionSetState {
		_, err := w.SetState(ctx, pod, dec)
		return true, err
	}
	return false, w.PatchReadiness(ctx, pod, StateOf(pod))
}
