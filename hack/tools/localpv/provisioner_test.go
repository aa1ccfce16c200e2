package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

func TestVolumeDirIsAChildOfRootNamedAfterTheVolume(t *testing.T) {
	got, err := volumeDir("/var/tmp/kruise-local/volumes", "pvc-0a1b")
	if err != nil || got != "/var/tmp/kruise-local/volumes/pvc-0a1b" {
		t.Errorf("volumeDir = %q, %v; want /var/tmp/kruise-local/volumes/pvc-0a1b", got, err)
	}
	for _, name := range []string{"", ".", "..", "a/b", "../etc", "/abs"} {
		if got, err := volumeDir("/root", name); err == nil {
			t.Errorf("volumeDir(%q) = %q, want an error", name, got)
		}
	}
}

func claim(size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func TestBuildVolume(t *testing.T) {
	pv, err := buildVolume("/vols", "node-a", controller.ProvisionOptions{PVName: "pvc-u1", PVC: claim("8Mi")})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Name != "pvc-u1" || pv.Spec.Local == nil || pv.Spec.Local.Path != "/vols/pvc-u1" {
		t.Errorf("volume %s at %+v, want pvc-u1, local /vols/pvc-u1", pv.Name, pv.Spec.Local)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("8Mi")) != 0 {
		t.Errorf("capacity %s, want the request 8Mi", q.String())
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy %s without a class's, want Delete", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	if len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("access modes %v, want the claim's", pv.Spec.AccessModes)
	}
	if pv.Spec.VolumeMode == nil || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("volume mode %v, want Filesystem", pv.Spec.VolumeMode)
	}
	if n := volumeNode(pv); n != "node-a" {
		t.Errorf("pinned to node %q, want node-a (affinity %+v)", n, pv.Spec.NodeAffinity)
	}

	retain := corev1.PersistentVolumeReclaimRetain
	pv, err = buildVolume("/vols", "node-a", controller.ProvisionOptions{PVName: "pvc-u1", PVC: claim("8Mi"),
		StorageClass: &storagev1.StorageClass{ReclaimPolicy: &retain}})
	if err != nil || pv.Spec.PersistentVolumeReclaimPolicy != retain {
		t.Errorf("with a Retain class: %v, %v; want Retain", err, pv)
	}

	noSize := claim("1Mi")
	noSize.Spec.Resources.Requests = nil
	if _, err := buildVolume("/vols", "node-a", controller.ProvisionOptions{PVName: "pvc-u1", PVC: noSize}); err == nil {
		t.Error("a claim without a storage request was provisioned")
	}
	if _, err := buildVolume("/vols", "node-a", controller.ProvisionOptions{PVName: "../x", PVC: claim("1Mi")}); err == nil {
		t.Error("a volume named ../x was provisioned")
	}
}

func TestDeletionDirOnlyTheVolumesOwnDirectory(t *testing.T) {
	own, err := buildVolume("/vols", "node-a", controller.ProvisionOptions{PVName: "pvc-u1", PVC: claim("8Mi")})
	if err != nil {
		t.Fatal(err)
	}
	if dir, err := deletionDir("/vols", "node-a", own); err != nil || dir != "/vols/pvc-u1" {
		t.Errorf("deletionDir = %q, %v; want /vols/pvc-u1", dir, err)
	}

	elsewhere := own.DeepCopy()
	elsewhere.Spec.Local.Path = "/etc"
	if dir, err := deletionDir("/vols", "node-a", elsewhere); err == nil {
		t.Errorf("a volume whose path is /etc would remove %q", dir)
	}
	other := own.DeepCopy()
	other.Name = "pvc-u2"
	if dir, err := deletionDir("/vols", "node-a", other); err == nil {
		t.Errorf("volume pvc-u2 at /vols/pvc-u1 would remove %q", dir)
	}
	hostPath := own.DeepCopy()
	hostPath.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/vols/pvc-u1"}}
	if dir, err := deletionDir("/vols", "node-a", hostPath); err == nil {
		t.Errorf("a hostPath volume would remove %q", dir)
	}

	_, err = deletionDir("/vols", "node-b", own)
	var ignored *controller.IgnoredError
	if !errors.As(err, &ignored) {
		t.Errorf("a volume of another node: %v, want an IgnoredError", err)
	}
}

func TestProvisionAndDeleteTheDirectory(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	p := &dirProvisioner{root: root, node: "node-a"}
	pv, state, err := p.Provision(ctx, controller.ProvisionOptions{PVName: "pvc-u1", PVC: claim("8Mi"), SelectedNodeName: "node-a"})
	if err != nil || state != controller.ProvisioningFinished {
		t.Fatalf("Provision: %v, %s", err, state)
	}
	dir := filepath.Join(root, "pvc-u1")
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Fatalf("after Provision %s: %v, %v; want a directory with mode 0777", dir, fi, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, pv); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Delete %s: %v, want it gone", dir, err)
	}
}

func TestProvisionForAnotherNodeAsksForAnother(t *testing.T) {
	root := t.TempDir()
	p := &dirProvisioner{root: root, node: "node-a"}
	_, state, err := p.Provision(context.Background(), controller.ProvisionOptions{PVName: "pvc-u1", PVC: claim("8Mi"), SelectedNodeName: "kwok-1"})
	if err == nil || state != controller.ProvisioningReschedule {
		t.Errorf("Provision on kwok-1: %v, %s; want an error and Reschedule", err, state)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left %v in the root", entries)
	}
}
