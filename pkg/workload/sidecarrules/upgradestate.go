package sidecarrules

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// UpgradeStates reads the pod's kruise.io/sidecarset-inplace-update-state: SidecarSet name → the
// state of its last in-place upgrade of the pod (empty when there is none). The SidecarSet
// controller drives upgrades by it; a PodUnavailableBudget reads it to tell a pod whose sidecars
// are still being replaced from an available one.
func UpgradeStates(pod *corev1.Pod) (map[string]*pub.InPlaceUpdateState, error) {
	out := map[string]*pub.InPlaceUpdateState{}
	raw := pod.Annotations[InPlaceUpdateStateAnnotation]
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("pod %s/%s: annotation %s is not a map of SidecarSet name to in-place update state: %w",
			pod.Namespace, pod.Name, InPlaceUpdateStateAnnotation, err)
	}
	return out, nil
}
