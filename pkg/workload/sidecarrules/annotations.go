package sidecarrules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod annotation keys and the injected env, as OpenKruise writes them: pods injected by
// OpenKruise keep their meaning under kruise.
const (
	// HashAnnotation maps each injected SidecarSet's name to an UpgradeSpec with the SidecarSet's
	// Hash at the version the pod runs.
	HashAnnotation = "kruise.io/sidecarset-hash"
	// HashWithoutImageAnnotation is the same map with HashWithoutImage: equal to the SidecarSet's
	// current one means only images changed since, which is what can be upgraded in place.
	HashWithoutImageAnnotation = "kruise.io/sidecarset-hash-without-image"
	// InjectedListAnnotation lists the injected SidecarSets' names, comma separated.
	InjectedListAnnotation = "kruise.io/sidecarset-injected-list"
	// InPlaceUpdateStateAnnotation maps a SidecarSet's name to the pub.InPlaceUpdateState of its
	// last in-place upgrade of the pod.
	InPlaceUpdateStateAnnotation = "kruise.io/sidecarset-inplace-update-state"
	// InjectedEnv is set to "true" in every injected container.
	InjectedEnv = "IS_INJECTED"
)

// UpgradeSpec is one SidecarSet's entry in HashAnnotation and HashWithoutImageAnnotation.
type UpgradeSpec struct {
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// Hash is Hash (or HashWithoutImage) of the SidecarSet at the version the pod runs.
	Hash           string `json:"hash"`
	SidecarSetName string `json:"sidecarSetName"`
	// SidecarList names the containers (and native sidecar init containers) the SidecarSet put in.
	SidecarList []string `json:"sidecarList"`
	// ControllerRevision names the SidecarSet's ControllerRevision injected, when known.
	ControllerRevision string `json:"controllerRevision,omitempty"`
}

// UpgradeSpecs reads the annotation key (HashAnnotation or HashWithoutImageAnnotation) of pod: none
// is an empty map, a value that does not parse an error naming the pod and key.
func UpgradeSpecs(pod *corev1.Pod, key string) (map[string]UpgradeSpec, error) {
	out := map[string]UpgradeSpec{}
	raw := pod.Annotations[key]
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("pod %s/%s: annotation %s is not a map of SidecarSet name to {hash, sidecarSetName, sidecarList}: %w", pod.Namespace, pod.Name, key, err)
	}
	return out, nil
}

// SetUpgradeSpec records spec under spec.SidecarSetName in the annotation key of pod, keeping the
// other SidecarSets' entries.
func SetUpgradeSpec(pod *corev1.Pod, key string, spec UpgradeSpec) error {
	specs, err := UpgradeSpecs(pod, key)
	if err != nil {
		return err
	}
	specs[spec.SidecarSetName] = spec
	raw, err := json.Marshal(specs)
	if err != nil {
		return fmt.Errorf("encoding annotation %s: %w", key, err)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = string(raw)
	return nil
}

// Injected lists the SidecarSets InjectedListAnnotation names.
func Injected(pod *corev1.Pod) []string {
	raw := pod.Annotations[InjectedListAnnotation]
	if raw == "" {
		return nil
	}
	var names []string
	for _, n := range strings.Split(raw, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}
