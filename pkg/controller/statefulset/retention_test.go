package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestClaimOwners(t *testing.T) {
	set := gen.StatefulSet("web", gen.SetStatefulSetUID("set-uid"))
	pod := testPod("web", 1, healthy, "r")
	setRef := ownerRef("apps.kruise.io/v1beta1", "StatefulSet", "web", "set-uid")
	podRef := ownerRef("v1", "Pod", pod.Name, pod.UID)
	stalePodRef := ownerRef("v1", "Pod", pod.Name, "old-pod-uid")
	other := ownerRef("v1", "ConfigMap", "x", "cm-uid")
	cases := []struct {
		name        string
		r           Retention
		have        []metav1.OwnerReference
		condemned   bool
		nilPod      bool
		want        []metav1.OwnerReference
		wantChanged bool
	}{
		{name: "retain/retain: no owners", r: Retention{}, want: nil},
		{name: "retain/retain: ours removed, others kept", have: []metav1.OwnerReference{setRef, other, podRef}, want: []metav1.OwnerReference{other}, wantChanged: true},
		{name: "whenDeleted=Delete: the set owns it", r: Retention{DeleteWithSet: true}, want: []metav1.OwnerReference{setRef}, wantChanged: true},
		{name: "whenDeleted=Delete, already owned: unchanged", r: Retention{DeleteWithSet: true}, have: []metav1.OwnerReference{setRef}, want: []metav1.OwnerReference{setRef}},
		{name: "whenScaled=Delete, wanted ordinal: no pod owner (not on pod failure)", r: Retention{DeleteOnScaledIn: true}, want: nil},
		{name: "whenScaled=Delete, condemned: the pod owns it", r: Retention{DeleteOnScaledIn: true}, condemned: true,
			want: []metav1.OwnerReference{podRef}, wantChanged: true},
		{name: "both Delete, condemned: pod only", r: Retention{DeleteWithSet: true, DeleteOnScaledIn: true}, condemned: true,
			have: []metav1.OwnerReference{setRef}, want: []metav1.OwnerReference{podRef}, wantChanged: true},
		{name: "both Delete, scaled back up: set only", r: Retention{DeleteWithSet: true, DeleteOnScaledIn: true},
			have: []metav1.OwnerReference{podRef}, want: []metav1.OwnerReference{setRef}, wantChanged: true},
		{name: "stale pod reference of an earlier pod dropped", r: Retention{DeleteOnScaledIn: true}, condemned: true,
			have: []metav1.OwnerReference{stalePodRef}, want: []metav1.OwnerReference{podRef}, wantChanged: true},
		{name: "no pod yet: set only", r: Retention{DeleteWithSet: true, DeleteOnScaledIn: true}, nilPod: true, want: []metav1.OwnerReference{setRef}, wantChanged: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-1", OwnerReferences: tc.have}}
			p := pod
			if tc.nilPod {
				p = nil
			}
			got, changed := ClaimOwners(claim, tc.r, set, setTypeMeta, p, tc.condemned)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantChanged, changed)
		})
	}
}

func TestRetentionOf(t *testing.T) {
	set := gen.StatefulSet("")
	assert.Equal(t, Retention{}, RetentionOf(set))
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	assert.Equal(t, Retention{DeleteOnScaledIn: true}, RetentionOf(set))
}
