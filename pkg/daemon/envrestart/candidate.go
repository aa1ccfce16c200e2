package envrestart

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// updateState is the one field of pub.InPlaceUpdateState the restarter
// reads; decoding only it keeps a large or newer state cheap to read.
type updateState struct {
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata"`
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

// updatesEnvFromMetadata reports whether the pod's in-place update state
// says the update changes labels or annotations that containers read as
// env. A state that does not decode is an error: nobody is restarted for it.
func updatesEnvFromMetadata(pod *corev1.Pod) (bool, error) {
	raw, ok := stateAnnotation(pod)
	if !ok {
		return false, nil
	}
	var st updateState
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return false, fmt.Errorf("decoding annotation %s: %w", pub.InPlaceUpdateStateKey, err)
	}
	return st.UpdateEnvFromMetadata, nil
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

// candidate reports whether the restarter looks at the pod's containers:
// a live pod under an in-place update that changes env from metadata.
func candidate(pod *corev1.Pod) (bool, error) {
	if pod.DeletionTimestamp != nil || !updating(pod) {
		return false, nil
	}
	return updatesEnvFromMetadata(pod)
}
