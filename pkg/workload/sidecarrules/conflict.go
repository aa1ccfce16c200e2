package sidecarrules

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ConflictKind is what two SidecarSets clash on.
type ConflictKind string

const (
	// ContainerConflict: both put a container of this name into the pod (in containers or
	// initContainers, either list: a pod's container names are unique across both).
	ContainerConflict ConflictKind = "container"
	// VolumeConflict: both add a volume of this name, with different contents.
	VolumeConflict ConflictKind = "volume"
	// AnnotationConflict: both patch this pod annotation, one of them with policy Overwrite.
	AnnotationConflict ConflictKind = "annotation"
)

// Conflict is one thing two SidecarSets that may select the same pod would both put in it,
// differently: injected together, the pod would be invalid, or one would silently undo the other.
type Conflict struct {
	// SidecarSet is the one judged, Other the one already there.
	SidecarSet, Other string
	Kind              ConflictKind
	// Name is the container's or volume's name, or the annotation's key.
	Name string
}

func (c Conflict) String() string {
	what := map[ConflictKind]string{
		ContainerConflict:  "both inject a container named %q",
		VolumeConflict:     "both add a volume named %q, with different contents",
		AnnotationConflict: "both patch the pod annotation %q and one of them overwrites it",
	}[c.Kind]
	return fmt.Sprintf("SidecarSets %s and %s may select the same pods and "+what, c.SidecarSet, c.Other, c.Name)
}

// Conflicts lists what ss and other clash on when they may select the same pod (MayOverlap);
// none when they may not, when they are the same SidecarSet, or when one is a canary of the other
// (where both select a pod, only the canary is injected, so they share names by design).
func Conflicts(ss, other *appsv1beta1.SidecarSet) []Conflict {
	if ss.Name == other.Name || canaryPair(ss, other) || !MayOverlap(ss, other) {
		return nil
	}
	var out []Conflict
	add := func(kind ConflictKind, name string) {
		out = append(out, Conflict{SidecarSet: ss.Name, Other: other.Name, Kind: kind, Name: name})
	}
	theirs := injectedNames(other)
	for _, n := range injectedNames(ss) {
		if slices.Contains(theirs, n) {
			add(ContainerConflict, n)
		}
	}
	for i := range ss.Spec.Volumes {
		v := &ss.Spec.Volumes[i]
		if o := volumeNamed(other, v.Name); o != nil && !equality.Semantic.DeepEqual(v, o) {
			add(VolumeConflict, v.Name)
		}
	}
	ours, theirPolicies := patchedAnnotations(ss), patchedAnnotations(other)
	for _, key := range sortedKeys(ours) {
		p, ok := theirPolicies[key]
		if ok && (p == appsv1beta1.SidecarSetOverwritePatchPolicy || ours[key] == appsv1beta1.SidecarSetOverwritePatchPolicy) {
			add(AnnotationConflict, key)
		}
	}
	return out
}

// canaryPair says whether one of a and b is a canary SidecarSet whose base is the other.
func canaryPair(a, b *appsv1beta1.SidecarSet) bool {
	isCanaryOf := func(c, base *appsv1beta1.SidecarSet) bool {
		return c.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] == "true" &&
			c.Annotations[appsv1beta1.SidecarSetBaseAnnotation] == base.Name
	}
	return isCanaryOf(a, b) || isCanaryOf(b, a)
}

// injectedNames are the names of the containers ss puts into a pod: each of its init containers
// and containers, a HotUpgrade container (hot upgrade is for containers only) as its two copies
// <name>-1 and <name>-2.
func injectedNames(ss *appsv1beta1.SidecarSet) []string {
	var names []string
	for i := range ss.Spec.InitContainers {
		names = append(names, ss.Spec.InitContainers[i].Name)
	}
	for i := range ss.Spec.Containers {
		c := &ss.Spec.Containers[i]
		if c.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade {
			names = append(names, c.Name+"-1", c.Name+"-2")
			continue
		}
		names = append(names, c.Name)
	}
	return names
}

func volumeNamed(ss *appsv1beta1.SidecarSet, name string) *corev1.Volume {
	for i := range ss.Spec.Volumes {
		if ss.Spec.Volumes[i].Name == name {
			return &ss.Spec.Volumes[i]
		}
	}
	return nil
}

// patchedAnnotations maps each pod annotation ss patches other than with Retain (which never
// changes a value the pod has) to its policy; Retain is the policy when unset.
func patchedAnnotations(ss *appsv1beta1.SidecarSet) map[string]appsv1beta1.SidecarSetPatchPolicyType {
	out := map[string]appsv1beta1.SidecarSetPatchPolicyType{}
	for _, p := range ss.Spec.PatchPodMetadata {
		if p.PatchPolicy == "" || p.PatchPolicy == appsv1beta1.SidecarSetRetainPatchPolicy {
			continue
		}
		for k := range p.Annotations {
			out[k] = p.PatchPolicy
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
