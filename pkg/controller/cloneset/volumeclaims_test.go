package cloneset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/workload/claimupdate"
)

func TestClaimsChanged(t *testing.T) {
	mk := func(name, size, class string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		}}
		if class != "" {
			c.Spec.StorageClassName = &class
		}
		return c
	}
	templates := []corev1.PersistentVolumeClaim{*mk("data", "2Mi", "")}
	fast := []corev1.PersistentVolumeClaim{*mk("data", "1Mi", "fast")}
	cases := []struct {
		name      string
		templates []corev1.PersistentVolumeClaim
		claims    claimupdate.Claims
		extra     bool
		want      bool
	}{
		{"matching", templates, claimupdate.Claims{"data": mk("data-x", "2Mi", "std")}, false, false},
		{"only smaller: expanded, not recreated", templates, claimupdate.Claims{"data": mk("data-x", "1Mi", "std")}, false, false},
		{"class changed", fast, claimupdate.Claims{"data": mk("data-x", "1Mi", "std")}, false, true},
		{"template added", append(templates, *mk("logs", "1Mi", "")), claimupdate.Claims{"data": mk("data-x", "2Mi", "std")}, false, true},
		{"template removed", templates, claimupdate.Claims{"data": mk("data-x", "2Mi", "std")}, true, true},
		{"no templates, no claims", nil, claimupdate.Claims{}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClaimsChanged(tc.templates, tc.claims, tc.extra); got != tc.want {
				t.Errorf("ClaimsChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
