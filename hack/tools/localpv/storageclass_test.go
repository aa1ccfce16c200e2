package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestDefaultClass(t *testing.T) {
	c := defaultClass("localpv", provisionerName)
	if c.Name != "localpv" || c.Provisioner != provisionerName || c.Annotations[defaultClassAnnotation] != "true" {
		t.Errorf("class %s of %s, annotations %v: want the default class localpv of %s", c.Name, c.Provisioner, c.Annotations, provisionerName)
	}
	if c.VolumeBindingMode == nil || *c.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Errorf("binding mode %v, want WaitForFirstConsumer", c.VolumeBindingMode)
	}
	if c.AllowVolumeExpansion == nil || !*c.AllowVolumeExpansion {
		t.Error("expansion not allowed")
	}
	if c.ReclaimPolicy == nil || *c.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy %v, want Delete", c.ReclaimPolicy)
	}
}

func TestClassUpdate(t *testing.T) {
	want := defaultClass("localpv", provisionerName)
	if upd, err := classUpdate(want.DeepCopy(), want); err != nil || upd != nil {
		t.Errorf("the class as wanted: update %v, %v; want none", upd, err)
	}

	drifted := want.DeepCopy()
	drifted.Annotations = map[string]string{"keep": "me"}
	off := false
	drifted.AllowVolumeExpansion = &off
	upd, err := classUpdate(drifted, want)
	if err != nil || upd == nil {
		t.Fatalf("a class no longer default nor expandable: %v, %v; want an update", upd, err)
	}
	if upd.Annotations[defaultClassAnnotation] != "true" || upd.Annotations["keep"] != "me" || !*upd.AllowVolumeExpansion {
		t.Errorf("update %v, expansion %v: want default again, expandable, other annotations kept", upd.Annotations, *upd.AllowVolumeExpansion)
	}

	foreign := want.DeepCopy()
	foreign.Provisioner = "example.com/other"
	if _, err := classUpdate(foreign, want); err == nil {
		t.Error("a class of the same name of another provisioner: no error")
	}
	immediate := want.DeepCopy()
	mode := storagev1.VolumeBindingImmediate
	immediate.VolumeBindingMode = &mode
	if _, err := classUpdate(immediate, want); err == nil {
		t.Error("a class binding Immediately: no error (the mode cannot be changed)")
	}
}

func TestEnsureClassIsIdempotent(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	want := defaultClass("localpv", provisionerName)
	for range 2 {
		if err := ensureClass(ctx, client, want); err != nil {
			t.Fatal(err)
		}
	}
	got, err := client.StorageV1().StorageClasses().Get(ctx, "localpv", metav1.GetOptions{})
	if err != nil || got.Provisioner != provisionerName {
		t.Fatalf("class after ensureClass: %v, %v", got, err)
	}
	got.Annotations[defaultClassAnnotation] = "false"
	if _, err := client.StorageV1().StorageClasses().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensureClass(ctx, client, want); err != nil {
		t.Fatal(err)
	}
	got, _ = client.StorageV1().StorageClasses().Get(ctx, "localpv", metav1.GetOptions{})
	if got.Annotations[defaultClassAnnotation] != "true" {
		t.Errorf("annotations %v after ensureClass: want the class default again", got.Annotations)
	}
}

func TestEnsureClassWaitsForTheAPIServer(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	failures := 2
	client.PrependReactor("get", "storageclasses", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, errors.New("connection refused")
	})
	if err := ensureClassPatiently(ctx, client, defaultClass("localpv", provisionerName), time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("with the API answering on the third call: %v", err)
	}
	if _, err := client.StorageV1().StorageClasses().Get(ctx, "localpv", metav1.GetOptions{}); err != nil {
		t.Errorf("the class after the API came back: %v", err)
	}

	foreign := defaultClass("localpv", "example.com/other")
	err := ensureClassPatiently(ctx, fake.NewClientset(foreign), defaultClass("localpv", provisionerName), time.Millisecond, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "example.com/other") {
		t.Errorf("a foreign class of the name: %v, want the reason, not a timeout", err)
	}
}
