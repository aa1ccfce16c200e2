package statefulset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Retention is persistentVolumeClaimRetentionPolicy read: whether the PVCs go with the set
// when it is deleted, and with their pod when its ordinal is scaled away.
type Retention struct {
	DeleteWithSet    bool
	DeleteOnScaledIn bool
}

// RetentionOf reads the set's policy; unset fields are Retain.
func RetentionOf(set *appsv1beta1.StatefulSet) Retention {
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil {
		return Retention{}
	}
	return Retention{
		DeleteWithSet:    p.WhenDeleted == appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
		DeleteOnScaledIn: p.WhenScaled == appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
}

// ClaimOwners returns the owner references claim should carry, and whether they differ from its
// own, as the built-in controller keeps them: whenDeleted=Delete makes the set an owner, so the
// garbage collector deletes the PVC with the set; whenScaled=Delete makes the pod an owner once
// its ordinal is no longer wanted (condemned), so the PVC goes with the pod, and only then (a pod
// that fails or is recreated keeps its PVC). A condemned pod's PVC is not the set's any more,
// so that scaling back up before the pod is gone cannot leave it to the set. References to
// anything else are kept as they are.
func ClaimOwners(claim *corev1.PersistentVolumeClaim, r Retention, set metav1.Object, setKind metav1.TypeMeta, pod *corev1.Pod, condemned bool) ([]metav1.OwnerReference, bool) {
	wantSet := r.DeleteWithSet && !(condemned && r.DeleteOnScaledIn)
	wantPod := pod != nil && condemned && r.DeleteOnScaledIn
	var out []metav1.OwnerReference
	changed := false
	hasSet, hasPod := false, false
	for _, ref := range claim.OwnerReferences {
		switch {
		case ref.UID == set.GetUID():
			if !wantSet {
				changed = true
				continue
			}
			hasSet = true
		case pod != nil && ref.UID == pod.UID:
			if !wantPod {
				changed = true
				continue
			}
			hasPod = true
		case pod != nil && ref.Kind == "Pod" && ref.Name == pod.Name:
			changed = true // a reference to an earlier pod of the ordinal: it is gone
			continue
		}
		out = append(out, ref)
	}
	if wantSet && !hasSet {
		out = append(out, ownerRef(setKind.APIVersion, setKind.Kind, set.GetName(), set.GetUID()))
		changed = true
	}
	if wantPod && !hasPod {
		out = append(out, ownerRef("v1", "Pod", pod.Name, pod.UID))
		changed = true
	}
	return out, changed
}

func ownerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
}
