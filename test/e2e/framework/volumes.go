package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// StaticVolumeSize is the capacity of each StaticVolumes volume: ask for it, or less.
const StaticVolumeSize = "16Mi"

// StaticVolumes creates n hostPath PersistentVolumes of storage class class, each a directory of
// its own under a new temporary directory on this machine, the cluster's only node: the local
// cluster has no provisioner, and a class of the test's own keeps the volumes to its claims. They
// are retained when their claim goes (a claim made later never binds a used volume), and deleted,
// with their directories, when the test ends.
func (f *Framework) StaticVolumes(ctx context.Context, t testing.TB, class string, n int) []string {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "kruise-e2e-pv-")
	if err != nil {
		t.Fatalf("creating the volumes' directory: %v", err)
	}
	var names []string
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// A volume still bound goes once the namespace, and so its claim, is gone.
		for _, name := range names {
			err := f.Client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting PersistentVolume %s: %v", name, err)
			}
		}
		if err := os.RemoveAll(root); err != nil {
			t.Logf("removing %s: %v", root, err)
		}
	})
	for i := range n {
		name := fmt.Sprintf("%s-%d", class, i)
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kruise.e2e/test": "true"}},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              class,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(StaticVolumeSize)},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(root, name), Type: ptr.To(corev1.HostPathDirectoryOrCreate),
				}},
			},
		}
		if _, err := f.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating PersistentVolume %s: %v", name, err)
		}
		names = append(names, name)
	}
	return names
}
