package sidecarrules

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Hash is the version of what ss injects that a pod records in HashAnnotation: its containers and,
// when it has native sidecars, its init containers (those the kubelet keeps running, so a change
// to them is a change to the running pod). The encoding is OpenKruise's (sha256 of the JSON of
// {"containers", "initContainers"}, safe-encoded), so equal specs give equal hashes.
func Hash(ss *appsv1beta1.SidecarSet) (string, error) {
	return hashOf(ss.Spec.Containers, ss.Spec.InitContainers)
}

// HashWithoutImage is Hash with every image left out: a pod whose recorded HashWithoutImage equals
// the SidecarSet's differs from it in images only, which an in-place upgrade can apply.
func HashWithoutImage(ss *appsv1beta1.SidecarSet) (string, error) {
	return hashOf(withoutImages(ss.Spec.Containers), withoutImages(ss.Spec.InitContainers))
}

func withoutImages(cs []appsv1beta1.SidecarContainer) []appsv1beta1.SidecarContainer {
	if cs == nil {
		return nil
	}
	out := make([]appsv1beta1.SidecarContainer, len(cs))
	for i := range cs {
		out[i] = *cs[i].DeepCopy()
		out[i].Image = ""
	}
	return out
}

func hashOf(containers, initContainers []appsv1beta1.SidecarContainer) (string, error) {
	doc := map[string]any{"containers": containers}
	for i := range initContainers {
		if IsNative(initContainers[i].Container) {
			doc["initContainers"] = initContainers
			break
		}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding the SidecarSet's containers: %w", err)
	}
	return rand.SafeEncodeString(fmt.Sprintf("%x", sha256.Sum256(raw))), nil
}

// IsNative says whether c is a native sidecar: an init container the kubelet starts before the
// app containers and keeps running (restartPolicy Always).
func IsNative(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
