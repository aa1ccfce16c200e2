package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// knownStates are the states kruise writes; any other label value is someone else's.
var knownStates = []pub.LifecycleStateType{
	pub.LifecycleStatePreparingNormal, pub.LifecycleStateNormal,
	pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating, pub.LifecycleStateUpdated,
	pub.LifecycleStatePreparingDelete,
}

// StateOf returns the pod's lifecycle state, the value of its state label: "" when the pod has
// none (created before its workload used lifecycle, or adopted), and possibly a value that is not
// Known (written by hand). Decide reads "" as Normal and refuses to move an unknown value.
func StateOf(pod *corev1.Pod) pub.LifecycleStateType {
	if pod == nil {
		return ""
	}
	return pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
}

// Known reports whether s is one of the six lifecycle states.
func Known(s pub.LifecycleStateType) bool {
	return slices.Contains(knownStates, s)
}

// Since returns when the pod entered its state, from the timestamp annotation; false when the
// annotation is missing or not RFC 3339.
func Since(pod *corev1.Pod) (time.Time, bool) {
	if pod == nil {
		return time.Time{}, false
	}
	v, ok := pod.Annotations[pub.LifecycleTimestampKey]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// timestamp is the annotation value for a change made now.
func timestamp(clk clock.PassiveClock) string {
	return clk.Now().UTC().Format(time.RFC3339)
}

// SetState moves pod, a copy the caller owns, to state: the state label and the timestamp
// annotation, which is written even when the state is unchanged.
func SetState(pod *corev1.Pod, state pub.LifecycleStateType, clk clock.PassiveClock) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[pub.LifecycleStateKey] = string(state)
	pod.Annotations[pub.LifecycleTimestampKey] = timestamp(clk)
}

// StateSetter is SetState bound to state and clk, for a caller that collects pod changes into a
// write of its own (the in-place update writes Updating together with the new spec).
func StateSetter(state pub.LifecycleStateType, clk clock.PassiveClock) func(*corev1.Pod) {
	return func(pod *corev1.Pod) { SetState(pod, state, clk) }
}

// StatePatch is the JSON merge patch, of metadata only, that moves a pod to state. It carries no
// resourceVersion: the state is a decision on the pod as read, and a caller that must not
// overwrite a newer decision adds its own precondition (or uses Decision.Patch).
func StatePatch(state pub.LifecycleStateType, clk clock.PassiveClock) ([]byte, error) {
	return marshalMeta(statePatchMeta(state, clk))
}

// patchMeta is the metadata of a merge patch; nil fields are left out.
type patchMeta struct {
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	Finalizers      []string          `json:"finalizers,omitempty"`
}

func statePatchMeta(state pub.LifecycleStateType, clk clock.PassiveClock) patchMeta {
	return patchMeta{
		Labels:      map[string]string{pub.LifecycleStateKey: string(state)},
		Annotations: map[string]string{pub.LifecycleTimestampKey: timestamp(clk)},
	}
}

func marshalMeta(m patchMeta) ([]byte, error) {
	data, err := json.Marshal(map[string]patchMeta{"metadata": m})
	if err != nil {
		return nil, fmt.Errorf("encoding the lifecycle patch: %w", err)
	}
	return data, nil
}
