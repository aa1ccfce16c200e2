package sidecarrules

import (
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// SetHashAnnotations records Hash and HashWithoutImage of ss in its own annotations
// HashAnnotation and HashWithoutImageAnnotation, as OpenKruise keeps them on the SidecarSet (tools
// compare a pod's recorded hash with them). It says whether they changed.
func SetHashAnnotations(ss *appsv1beta1.SidecarSet) (bool, error) {
	full, err := Hash(ss)
	if err != nil {
		return false, err
	}
	withoutImage, err := HashWithoutImage(ss)
	if err != nil {
		return false, err
	}
	if ss.Annotations[HashAnnotation] == full && ss.Annotations[HashWithoutImageAnnotation] == withoutImage {
		return false, nil
	}
	if ss.Annotations == nil {
		ss.Annotations = map[string]string{}
	}
	ss.Annotations[HashAnnotation] = full
	ss.Annotations[HashWithoutImageAnnotation] = withoutImage
	return true, nil
}

// DefaultInjectPolicies writes the podInjectPolicy each container is injected with when it has
// none, as OpenKruise's defaulting does at admission: BeforeAppContainer for containers,
// AfterAppContainer for initContainers. old is the stored SidecarSet on an update (nil on create):
// there only containers that are new, or whose stored version had the field, get it. A
// SidecarSet stored without the field keeps it unset, because the field is part of its hashes:
// writing it on an image-only update would make every pod it injected look changed in more
// than images, and no longer upgradable in place. It says whether it changed ss.
func DefaultInjectPolicies(ss, old *appsv1beta1.SidecarSet) bool {
	changed := false
	fill := func(list []appsv1beta1.SidecarContainer, stored []appsv1beta1.SidecarContainer, policy appsv1beta1.PodInjectPolicyType) {
		for i := range list {
			c := &list[i]
			if c.PodInjectPolicy != "" || !mayDefault(c.Name, stored, old != nil) {
				continue
			}
			c.PodInjectPolicy = policy
			changed = true
		}
	}
	var storedContainers, storedInit []appsv1beta1.SidecarContainer
	if old != nil {
		storedContainers, storedInit = old.Spec.Containers, old.Spec.InitContainers
	}
	fill(ss.Spec.Containers, storedContainers, appsv1beta1.BeforeAppContainerType)
	fill(ss.Spec.InitContainers, storedInit, appsv1beta1.AfterAppContainerType)
	return changed
}

// mayDefault: on create always; on update when the container is new or was stored with a policy.
func mayDefault(name string, stored []appsv1beta1.SidecarContainer, update bool) bool {
	if !update {
		return true
	}
	for i := range stored {
		if stored[i].Name == name {
			return stored[i].PodInjectPolicy != ""
		}
	}
	return true
}
