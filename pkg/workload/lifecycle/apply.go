package lifecycle

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Apply makes the decision's pod changes on pod, a copy the caller owns: for ActionSetState the
// restored hook and the state; nothing for other actions (ActionUpdate's Updating is written by
// the in-place update, with StateSetter).
func (d Decision) Apply(pod *corev1.Pod, clk clock.PassiveClock) {
	if d.Action != ActionSetState {
		return
	}
	RestoreHook(pod, d.RestoreHook)
	SetState(pod, d.State, clk)
}

// Patch is the JSON merge patch, of pod's metadata only, that makes the decision's changes; nil
// for actions other than ActionSetState. A patch that restores finalizers must write the whole
// list, so it carries pod's resourceVersion: a pod changed since it was read fails with a
// conflict, and the workload decides again.
func (d Decision) Patch(pod *corev1.Pod, clk clock.PassiveClock) ([]byte, error) {
	if d.Action != ActionSetState {
		return nil, nil
	}
	meta := statePatchMeta(d.State, clk)
	if h := d.RestoreHook; h != nil {
		for k, v := range h.LabelsHandler {
			meta.Labels[k] = v
		}
		restored := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Finalizers: slices.Clone(pod.Finalizers)}}
		RestoreHook(restored, &pub.LifecycleHook{FinalizersHandler: h.FinalizersHandler})
		if len(restored.Finalizers) != len(pod.Finalizers) {
			meta.Finalizers = restored.Finalizers
			meta.ResourceVersion = pod.ResourceVersion
		}
	}
	return marshalMeta(meta)
}
