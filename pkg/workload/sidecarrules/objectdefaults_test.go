package sidecarrules

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestSetHashAnnotationsRecordsThePodsHashes(t *testing.T) {
	ss := sidecarSet("agent:1")
	changed, err := SetHashAnnotations(ss)
	if err != nil || !changed {
		t.Fatalf("SetHashAnnotations = %v, %v; want a change", changed, err)
	}
	full, _ := Hash(ss)
	withoutImage, _ := HashWithoutImage(ss)
	if ss.Annotations[HashAnnotation] != full || ss.Annotations[HashWithoutImageAnnotation] != withoutImage {
		t.Errorf("annotations %v, want the hashes pods record (%s, %s)", ss.Annotations, full, withoutImage)
	}
	if changed, _ := SetHashAnnotations(ss); changed {
		t.Errorf("a second call changed what was current")
	}
	ss.Spec.Containers[0].Image = "agent:2"
	if changed, _ := SetHashAnnotations(ss); !changed || ss.Annotations[HashWithoutImageAnnotation] != withoutImage {
		t.Errorf("an image change: changed %v, hash without image %s (want unchanged %s)", changed, ss.Annotations[HashWithoutImageAnnotation], withoutImage)
	}
}

func TestDefaultInjectPolicies(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	newSet := func() *appsv1beta1.SidecarSet {
		ss := sidecarSet("agent:1")
		ss.Spec.InitContainers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "native", Image: "n:1", RestartPolicy: &always}}}
		return ss
	}
	ss := newSet()
	if !DefaultInjectPolicies(ss, nil) {
		t.Fatal("create: nothing defaulted")
	}
	if got := ss.Spec.InitContainers[0].PodInjectPolicy; got != appsv1beta1.AfterAppContainerType {
		t.Errorf("initContainers[0].podInjectPolicy = %q, want AfterAppContainer", got)
	}
	if got := ss.Spec.Containers[0].PodInjectPolicy; got != appsv1beta1.BeforeAppContainerType {
		t.Errorf("containers[0].podInjectPolicy = %q, want BeforeAppContainer", got)
	}

	// An update of a SidecarSet stored with the defaults gets them again (a replace without them).
	stored := ss.DeepCopy()
	update := newSet()
	update.Spec.Containers[0].Image = "agent:2"
	if !DefaultInjectPolicies(update, stored) || update.Spec.InitContainers[0].PodInjectPolicy != appsv1beta1.AfterAppContainerType {
		t.Errorf("update of a defaulted SidecarSet: %+v", update.Spec.InitContainers[0])
	}

	// One stored without them (created before) keeps its hashes: an image change stays one.
	legacy := newSet()
	update = newSet()
	update.Spec.Containers[0].Image = "agent:2"
	update.Spec.Containers = append(update.Spec.Containers, appsv1beta1.SidecarContainer{Container: corev1.Container{Name: "added", Image: "a:1"}})
	DefaultInjectPolicies(update, legacy)
	if update.Spec.Containers[0].PodInjectPolicy != "" || update.Spec.InitContainers[0].PodInjectPolicy != "" {
		t.Errorf("a legacy SidecarSet's containers got a default: %+v", update.Spec)
	}
	if update.Spec.Containers[1].PodInjectPolicy != appsv1beta1.BeforeAppContainerType {
		t.Errorf("a container added by the update got no default")
	}
}
