package envrestart

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// updateState is what the restarter reads of pub.InPlaceUpdateState;
// decoding only that keeps a large or newer state cheap to read.
type updateState struct {
	UpdateEnvFromMetadata bool                  `json:"updateEnvFromMetadata"`
	LastContainerStatuses map[string]lastStatus `json:"lastContainerStatuses"`
}

// lastStatus is what a container ran when its batch of the update was
// applied, and whether the update restarts it without a new image.
type lastStatus struct {
	ContainerID string `json:"containerID"`
	Restart     bool   `json:"restart"`
}

// restarts names, per container the update restarts without a new image
// (a restart asked by kubectl.kubernetes.io/restartedAt), the instance that
// ran before its batch: that one, and only that one, is stopped.
func (s *updateState) restarts() map[string]string {
	out := map[string]string{}
	for name, last := range s.LastContainerStatuses {
		if last.Restart && last.ContainerID != "" {
			out[name] = last.ContainerID
		}
	}
	return out
}

// stateAnnotation is the pod's in-place update state, under the current key
// or, failing that, the key of OpenKruise before v0.9.
func stateAnnotation(pod *corev1.Pod) (string, bool) {
	if v, ok := pod.Annotations[pub.InPlaceUpdateStateKey]; ok {
		return v, true
	}
	v, ok := pod.Annotations[pub.InPlaceUpdateStateKeyOld]
	return v, ok
}

// readState decodes the pod's in-place update state; nil when it has none.
// A state that does not decode is an error: nobody is restarted for it.
func readState(pod *corev1.Pod) (*updateState, error) {
	raw, ok := stateAnnotation(pod)
	if !ok {
		return nil, nil
	}
	var st updateState
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return nil, fmt.Errorf("decoding annotation %s: %w", pub.InPlaceUpdateStateKey, err)
	}
	return &st, nil
}

// updating reports whether an in-place update of the pod is in progress:
// its InPlaceUpdateReady condition is False. Before the update starts and
// once it has completed the condition is True (or absent), and nothing is
// restarted then, whatever the env says.
func updating(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == pub.InPlaceUpdateReady {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

// candidate returns the in-place update state of a pod the restarter looks
// at: a live pod under an in-place update that changes env from metadata
// (a restart is written as one); nil for any other pod.
func candidate(pod *corev1.Pod) (*updateState, error) {
	if pod.DeletionTimestamp != nil || !updating(pod) {
		return nil, nil
	}
	st, err := readState(pod)
	if err != nil || st == nil || !st.UpdateEnvFromMetadata {
		return nil, err
	}
	return st, nil
}
