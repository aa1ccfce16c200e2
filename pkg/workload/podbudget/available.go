package podbudget

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// Available reports whether a budget counts pod as available: running, Ready (or, with
// protectUnready, merely running), not being deleted, not marked for deletion by its workload
// (apps.kruise.io/specified-delete: a surge or scale-in pod that would inflate what may be
// disrupted, OpenKruise #2175), without an unavailable-pod.kruise.io/ label, and not in the middle
// of an in-place update. Images pinned by digest are not compared with the image IDs the runtime
// reports (OpenKruise #2570 counted such pods unavailable, hence unprotected).
func Available(pod *corev1.Pod, protectUnready bool) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	if _, marked := pod.Labels[appsv1beta1.SpecifiedDeleteKey]; marked {
		return false
	}
	for k := range pod.Labels {
		if strings.HasPrefix(k, policyv1alpha1.PodUnavailableLabelPrefix) {
			return false
		}
	}
	if !protectUnready {
		if c := podstate.Condition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
			return false
		}
	}
	return !updatingInPlace(pod)
}

// updatingInPlace reports whether an in-place update of the pod is under way, as the engine
// tells it: InPlaceUpdateReady False, the lifecycle state Updating, its workload's update state
// or a SidecarSet's upgrade state not yet applied in full (the kubelet has not restarted the
// containers with the new images: the pod may still read Ready for a moment). An unreadable
// state counts as an update under way.
func updatingInPlace(pod *corev1.Pod) bool {
	if c := inplace.Condition(pod); c != nil && c.Status == corev1.ConditionFalse {
		return true
	}
	if lifecycle.StateOf(pod) == pub.LifecycleStateUpdating {
		return true
	}
	if done, _, err := inplace.UpdateDone(pod); err != nil || !done {
		return true
	}
	states, err := sidecarrules.UpgradeStates(pod)
	if err != nil {
		return true
	}
	for _, st := range states {
		if done, _ := inplace.StateDone(pod, st); !done {
			return true
		}
	}
	return false
}
