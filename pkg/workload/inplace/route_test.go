package inplace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func routeTemplate(image string, env ...corev1.EnvVar) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image, Env: env}}}}
}

func TestRouteUpdate(t *testing.T) {
	v1, v2 := routeTemplate("app:1"), routeTemplate("app:2")
	v2env := routeTemplate("app:2", corev1.EnvVar{Name: "A", Value: "b"})
	for _, tc := range []struct {
		name     string
		policy   UpdatePolicy
		from, to *corev1.PodTemplateSpec
		inPlace  bool
		recreate bool
		refused  string
	}{
		{name: "ReCreate always recreates", policy: PolicyReCreate, from: v1, to: v2, recreate: true},
		{name: "an image change goes in place", policy: PolicyInPlaceIfPossible, from: v1, to: v2, inPlace: true},
		{name: "an env change falls back to recreate", policy: PolicyInPlaceIfPossible, from: v1, to: v2env, recreate: true},
		{name: "InPlaceOnly refuses an env change and says which field", policy: PolicyInPlaceOnly, from: v1, to: v2env, refused: "InPlaceOnly but the change cannot be applied in place: spec.containers[main].env"},
		{name: "an unknown revision recreates", policy: PolicyInPlaceIfPossible, to: v2, recreate: true},
		{name: "InPlaceOnly refuses an unknown revision", policy: PolicyInPlaceOnly, to: v2, refused: "no longer in the workload's history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RouteUpdate(tc.policy, tc.from, tc.to, Options{})
			if (r.InPlace != nil) != tc.inPlace || r.Recreate != tc.recreate {
				t.Errorf("route %+v: in place %v, recreate %v; want %v, %v", r, r.InPlace != nil, r.Recreate, tc.inPlace, tc.recreate)
			}
			switch {
			case tc.refused == "" && r.Refused != nil:
				t.Errorf("refused: %v", r.Refused)
			case tc.refused != "" && (r.Refused == nil || !strings.Contains(r.Refused.Error(), tc.refused)):
				t.Errorf("refused %v, want it to say %q", r.Refused, tc.refused)
			}
			if tc.inPlace && r.InPlace.ContainerImages["main"] != "app:2" {
				t.Errorf("in-place images %v, want main=app:2", r.InPlace.ContainerImages)
			}
		})
	}
}
