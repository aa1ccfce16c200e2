package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// boundClaim is ordinal's PVC of template data, bound, requesting and having size.
func boundClaim(ordinal int, size string) *corev1.PersistentVolumeClaim {
	q := resource.MustParse(size)
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ClaimName("data", "web", ordinal), Namespace: testNS, ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: q}},
	}
}

func onPodRollingUpdate(s *appsv1beta1.StatefulSet) {
	s.Spec.VolumeClaimUpdateStrategy.Type = appsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
}

// claimFixture is a 2-pod set whose template asks 2Gi and whose PVCs have 1Gi.
func claimFixture(t *testing.T, resize bool, mods ...func(*appsv1beta1.StatefulSet)) *fixture {
	set := statefulSet(2, "app:1", withClaims, func(s *appsv1beta1.StatefulSet) {
		s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		for _, m := range mods {
			m(s)
		}
	})
	rev := revisionOf(t, set, 1)
	objs := []runtime.Object{rev}
	for o := 0; o < 2; o++ {
		objs = append(objs, runningPod(t, set, rev, o), boundClaim(o, "1Gi"))
	}
	f := newFixture(t, set, objs...)
	f.ctrl.resizeClaims = resize
	return f
}

func TestOnPodRollingUpdateExpandsTheHighestPodsClaimFirst(t *testing.T) {
	f := claimFixture(t, true, onPodRollingUpdate)
	f.sync()
	w := f.writes()
	assert.Contains(t, w, "patch persistentvolumeclaims data-web-1")
	assert.NotContains(t, w, "patch persistentvolumeclaims data-web-0", "one pod's claims at a time (OrderedReady)")
	assert.Equal(t, []appsv1beta1.VolumeClaimStatus{{VolumeClaimName: "data"}}, f.status().VolumeClaims)
	assert.Contains(t, f.events(), "SuccessfulResize")
}

func TestOnDeleteOnlyCountsClaims(t *testing.T) {
	f := claimFixture(t, true)
	f.sync()
	for _, write := range f.writes() {
		assert.NotContains(t, write, "persistentvolumeclaims", "OnDelete expands nothing")
	}
	assert.Equal(t, []appsv1beta1.VolumeClaimStatus{{VolumeClaimName: "data"}}, f.status().VolumeClaims)
}

func TestResizeGateOffLeavesClaimsAndStatusAlone(t *testing.T) {
	f := claimFixture(t, false, onPodRollingUpdate)
	f.sync()
	for _, write := range f.writes() {
		assert.NotContains(t, write, "persistentvolumeclaims", "no PVC is expanded with the gate off")
	}
	assert.Empty(t, f.status().VolumeClaims)
}

func TestExpandedClaimsAreCountedCompatible(t *testing.T) {
	set := statefulSet(2, "app:1", withClaims, onPodRollingUpdate)
	rev := revisionOf(t, set, 1)
	f := newFixture(t, set, rev, runningPod(t, set, rev, 0), runningPod(t, set, rev, 1), boundClaim(0, "1Gi"),
		func() *corev1.PersistentVolumeClaim {
			c := boundClaim(1, "1Gi")
			c.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("512Mi") // still growing
			return c
		}())
	f.ctrl.resizeClaims = true
	f.sync()
	assert.Equal(t, []appsv1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 2, CompatibleReadyReplicas: 1}}, f.status().VolumeClaims)
}
