package sidecarrules

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// A HotUpgrade sidecar X runs as two containers, X-1 and X-2: one working, the other idle on
// upgradeStrategy.hotUpgradeEmptyImage. An upgrade starts the new image in the idle copy, lets
// the two hand over, then puts the old one on the empty image. The keys and values below are
// OpenKruise's, so that pods injected by either keep their meaning.
const (
	// WorkingHotUpgradeAnnotation maps each HotUpgrade sidecar's name to the copy working now
	// (JSON, e.g. {"envoy":"envoy-1"}).
	WorkingHotUpgradeAnnotation = "kruise.io/sidecarset-working-hotupgrade-container"
	// VersionEnv is set in each copy from its VersionAnnotation: "0" on the empty image, "1"
	// at injection, the SidecarSet's resourceVersion once upgraded.
	VersionEnv = "SIDECARSET_VERSION"
	// VersionAltEnv is set in each copy from its VersionAltAnnotation: the other copy's version
	// while they hand over, "0" otherwise.
	VersionAltEnv = "SIDECARSET_VERSION_ALT"

	// emptyVersion is the version of a copy on the empty image; injectedVersion of the working
	// copy at injection.
	emptyVersion    = "0"
	injectedVersion = "1"
)

// IsHotUpgrade says whether sc is upgraded by handing over between two copies.
func IsHotUpgrade(sc *appsv1beta1.SidecarContainer) bool {
	return sc.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade
}

// HotUpgradeCopies names the two containers a HotUpgrade sidecar runs as in a pod.
func HotUpgradeCopies(name string) (string, string) {
	return name + "-1", name + "-2"
}

// VersionAnnotation is the pod annotation holding the version the copy container runs.
func VersionAnnotation(container string) string {
	return "version.sidecarset.kruise.io/" + container
}

// VersionAltAnnotation is the pod annotation holding the version of the copy container's peer
// while they hand over.
func VersionAltAnnotation(container string) string {
	return "versionalt.sidecarset.kruise.io/" + container
}

// WorkingCopies reads WorkingHotUpgradeAnnotation: sidecar name → the copy working. None is an
// empty map.
func WorkingCopies(pod *corev1.Pod) (map[string]string, error) {
	out := map[string]string{}
	raw := pod.Annotations[WorkingHotUpgradeAnnotation]
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("pod %s/%s: annotation %s is not a map of sidecar name to container name: %w",
			pod.Namespace, pod.Name, WorkingHotUpgradeAnnotation, err)
	}
	return out, nil
}

// EncodeWorkingCopies is the value of WorkingHotUpgradeAnnotation for working.
func EncodeWorkingCopies(working map[string]string) (string, error) {
	raw, err := json.Marshal(working)
	if err != nil {
		return "", fmt.Errorf("encoding annotation %s: %w", WorkingHotUpgradeAnnotation, err)
	}
	return string(raw), nil
}

// WorkingAndIdle names the working copy of sidecar name by working (WorkingCopies) and the other
// one. As in OpenKruise, <name>-2 works unless <name>-1 is recorded.
func WorkingAndIdle(working map[string]string, name string) (string, string) {
	one, two := HotUpgradeCopies(name)
	if working[name] == one {
		return one, two
	}
	return two, one
}

// hotUpgradeCopies splits c, the container built for HotUpgrade sidecar sc, into its working copy
// (sc's image) and its idle copy (the empty image), each reading its version from the pod's
// annotations, and the annotations injection records for them.
func hotUpgradeCopies(sc *appsv1beta1.SidecarContainer, c corev1.Container) ([]corev1.Container, map[string]string) {
	one, two := HotUpgradeCopies(sc.Name)
	working, idle := *c.DeepCopy(), *c.DeepCopy()
	working.Name, idle.Name = one, two
	idle.Image = sc.UpgradeStrategy.HotUpgradeEmptyImage
	withVersionEnv(&working)
	withVersionEnv(&idle)
	return []corev1.Container{working, idle}, map[string]string{
		VersionAnnotation(one):    injectedVersion,
		VersionAltAnnotation(one): emptyVersion,
		VersionAnnotation(two):    emptyVersion,
		VersionAltAnnotation(two): injectedVersion,
	}
}

// withVersionEnv appends VersionEnv and VersionAltEnv to c, read from the pod's annotations by
// the downward API, so that an upgrade (which changes only annotations and an image) is seen by
// the restarted copy.
func withVersionEnv(c *corev1.Container) {
	fromAnnotation := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.annotations['%s']", key),
		}}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: VersionEnv, ValueFrom: fromAnnotation(VersionAnnotation(c.Name))},
		corev1.EnvVar{Name: VersionAltEnv, ValueFrom: fromAnnotation(VersionAltAnnotation(c.Name))},
	)
}
