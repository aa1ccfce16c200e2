package sidecarinjection

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// operation is one RFC 6902 operation.
type operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// diff is the JSON patch from pod to injected: each of the fields injection changes that differs
// is set whole ("add" replaces an existing member), so the patch holds no more than was changed
// and applies to the object as the API server has it.
func diff(pod, injected *corev1.Pod) ([]byte, error) {
	var ops []operation
	set := func(path string, before, after any, empty bool) {
		if apiequality.Semantic.DeepEqual(before, after) {
			return
		}
		if empty {
			ops = append(ops, operation{Op: "remove", Path: path})
			return
		}
		ops = append(ops, operation{Op: "add", Path: path, Value: after})
	}
	if pod.Annotations == nil && len(injected.Annotations) > 0 {
		ops = append(ops, operation{Op: "add", Path: "/metadata/annotations", Value: injected.Annotations})
	} else {
		set("/metadata/annotations", pod.Annotations, injected.Annotations, len(injected.Annotations) == 0)
	}
	set("/spec/initContainers", pod.Spec.InitContainers, injected.Spec.InitContainers, len(injected.Spec.InitContainers) == 0)
	set("/spec/containers", pod.Spec.Containers, injected.Spec.Containers, false)
	set("/spec/volumes", pod.Spec.Volumes, injected.Spec.Volumes, len(injected.Spec.Volumes) == 0)
	set("/spec/imagePullSecrets", pod.Spec.ImagePullSecrets, injected.Spec.ImagePullSecrets, len(injected.Spec.ImagePullSecrets) == 0)
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the sidecar injection patch: %w", err)
	}
	return raw, nil
}
