package inplace

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// A workload that keeps its in-place update state somewhere other than the pod's
// apps.kruise.io/inplace-update-state annotation (a SidecarSet keeps one state per SidecarSet
// in its own annotation) records and judges it with these, so that completion is read the same
// way for every workload.

// LastStatuses records what each named container (regular, or native sidecar init container)
// runs now: its image ID and container ID, to tell its successor by. A container without a
// status yet is recorded empty.
func LastStatuses(pod *corev1.Pod, names []string) map[string]pub.InPlaceUpdateContainerStatus {
	state := &pub.InPlaceUpdateState{}
	for _, name := range names {
		recordLastStatus(state, pod, name)
	}
	return state.LastContainerStatuses
}

// StateDone reports whether the update state records is applied in full on pod: no batch
// left and every container it touched restarted (see containersDone). waiting says what is
// awaited otherwise. A nil state is done.
func StateDone(pod *corev1.Pod, state *pub.InPlaceUpdateState) (done bool, waiting string) {
	if state == nil {
		return true, ""
	}
	if ok, why := containersDone(pod, state); !ok {
		return false, why
	}
	if hasNext(state) {
		return false, "later batches"
	}
	return true, ""
}
