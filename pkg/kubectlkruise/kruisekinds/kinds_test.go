package kruisekinds

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func TestMergePatchFor(t *testing.T) {
	Install()
	current := `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"web","resourceVersion":"5"},` +
		`"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}}}`
	// kubectl's patch names the container by its merge key and keeps the list's order.
	smp := `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"name":"b","image":"y:2"}]}}}}`
	got, err := MergePatchFor([]byte(current), []byte(smp))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"resourceVersion":"5"},"spec":{"template":{"spec":{"containers":[{"image":"x:1","name":"a"},{"image":"y:2","name":"b"}]}}}}`
	if string(got) != want {
		t.Errorf("MergePatchFor = %s\nwant %s", got, want)
	}
	if _, err := MergePatchFor([]byte(`{"apiVersion":"example.com/v1","kind":"Nope","metadata":{}}`), []byte(`{}`)); err == nil ||
		!strings.Contains(err.Error(), "no Go type") {
		t.Errorf("MergePatchFor of an unknown kind: %v, want an error", err)
	}
}

func TestUpdatePodSpec(t *testing.T) {
	ss := &appsv1alpha1.SidecarSet{Spec: appsv1alpha1.SidecarSetSpec{
		InitContainers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init", Image: "i:1"}}},
		Containers:     []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log", Image: "l:1"}}},
	}}
	ok, err := UpdatePodSpec(ss, func(s *corev1.PodSpec) error {
		s.InitContainers[0].Image, s.Containers[0].Image = "i:2", "l:2"
		return nil
	})
	if !ok || err != nil || ss.Spec.InitContainers[0].Image != "i:2" || ss.Spec.Containers[0].Image != "l:2" {
		t.Errorf("SidecarSet images: %t, %v, %+v", ok, err, ss.Spec)
	}
	if _, err := UpdatePodSpec(ss, func(s *corev1.PodSpec) error { s.ServiceAccountName = "x"; return nil }); err == nil {
		t.Error("a SidecarSet's service account: no error")
	}
	if _, err := UpdatePodSpec(ss, func(s *corev1.PodSpec) error { s.Containers = nil; return nil }); err == nil {
		t.Error("removing a SidecarSet's container: no error")
	}
	cs := &appsv1alpha1.CloneSet{}
	if ok, err := UpdatePodSpec(cs, func(s *corev1.PodSpec) error { s.ServiceAccountName = "x"; return nil }); !ok || err != nil || cs.Spec.Template.Spec.ServiceAccountName != "x" {
		t.Errorf("CloneSet: %t, %v", ok, err)
	}
	if ok, err := UpdatePodSpec(&corev1.Pod{}, func(*corev1.PodSpec) error { return nil }); ok || err != nil {
		t.Errorf("a Pod is kubectl's: %t, %v", ok, err)
	}
}

func TestExposeHelpers(t *testing.T) {
	for kind, want := range map[string]bool{"CloneSet": true, "StatefulSet": true, "DaemonSet": false, "SidecarSet": false} {
		if got := Exposable(schema.GroupKind{Group: "apps.kruise.io", Kind: kind}); got != want {
			t.Errorf("Exposable(%s) = %t", kind, got)
		}
	}
	if got, err := MapSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}}); err != nil || got != "a=1,b=2" {
		t.Errorf("MapSelector = %q, %v", got, err)
	}
}
