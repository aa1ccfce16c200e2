//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// A claim that names no storage class gets the local cluster's default one (localpv) and waits
// for its first consumer; once a pod uses it, it is bound to a new local volume, a directory on
// this machine that the pod writes to; a larger request grows it (the volume's capacity and the
// claim's status.capacity, no resize condition left); deleting the claim deletes the volume and
// its directory.
func TestLocalVolumeProvisionedGrownAndDeleted(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "localpv")
	claims := f.Client.CoreV1().PersistentVolumeClaims(ns)

	pvc, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the PVC: %v", err)
	}
	if c := pvc.Spec.StorageClassName; c == nil || *c != framework.DefaultStorageClass {
		t.Fatalf("the PVC got storage class %v, want the default %s", c, framework.DefaultStorageClass)
	}
	// The PV controller says why it does not bind yet; only then is Pending a decision, not a lag.
	f.WaitObjectEvent(ctx, t, ns, "PersistentVolumeClaim", "data", "WaitForFirstConsumer", time.Minute)
	if pvc, err = claims.Get(ctx, "data", metav1.GetOptions{}); err != nil || pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" {
		t.Fatalf("before any pod uses it the PVC is %v (%v), want Pending with no volume", describeClaim(pvc), err)
	}

	pod := f.BusyboxPod(ns, "user", "main")
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo written-by-$HOSTNAME > /data/hello && " + framework.EmptySidecarScript}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	f.CreateRunningPod(ctx, t, pod)

	pvc = f.WaitClaim(ctx, t, ns, "data", time.Minute, "bound", func(c *corev1.PersistentVolumeClaim) bool {
		return c.Status.Phase == corev1.ClaimBound
	})
	pv, err := f.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the PV %s: %v", pvc.Spec.VolumeName, err)
	}
	dir := filepath.Join(framework.VolumesDir, pv.Name)
	if pv.Spec.Local == nil || pv.Spec.Local.Path != dir || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Spec.NodeAffinity == nil || pv.Spec.StorageClassName != framework.DefaultStorageClass {
		t.Errorf("PV %s: source %+v, reclaim %s, affinity %+v, class %q; want local %s, Delete, pinned to the node, class %s",
			pv.Name, pv.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.NodeAffinity,
			pv.Spec.StorageClassName, dir, framework.DefaultStorageClass)
	}
	var written string
	framework.WaitFor(ctx, t, time.Minute, "the pod's file in "+dir, func(context.Context) (bool, string, error) {
		b, err := os.ReadFile(filepath.Join(dir, "hello"))
		written = strings.TrimSpace(string(b))
		return err == nil && written != "", fmt.Sprintf("%q, %v", written, err), nil
	})
	if written != "written-by-user" {
		t.Errorf("the volume's file says %q, want written-by-user", written)
	}

	if _, err := claims.Patch(ctx, "data", types.MergePatchType,
		[]byte(`{"spec":{"resources":{"requests":{"storage":"32Mi"}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("growing the PVC: %v", err)
	}
	want := resource.MustParse("32Mi")
	f.WaitClaim(ctx, t, ns, "data", time.Minute, "grown to 32Mi", func(c *corev1.PersistentVolumeClaim) bool {
		got := c.Status.Capacity[corev1.ResourceStorage]
		return got.Cmp(want) == 0 && len(c.Status.Conditions) == 0 && len(c.Status.AllocatedResourceStatuses) == 0
	})
	if pv, err = f.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("reading the PV %s: %v", pv.Name, err)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(want) != 0 {
		t.Errorf("PV %s has capacity %s after the resize, want 32Mi", pv.Name, got.String())
	}

	// The claim's protection finalizer keeps it until the pod is gone; then it goes, and its volume.
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the pod: %v", err)
	}
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the PVC: %v", err)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "PV "+pv.Name+" and "+dir+" deleted", func(ctx context.Context) (bool, string, error) {
		got, err := f.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		_, statErr := os.Stat(dir)
		if err == nil {
			return false, fmt.Sprintf("PV phase %s; directory: %v", got.Status.Phase, statErr), nil
		}
		return os.IsNotExist(statErr), fmt.Sprintf("PV gone; directory: %v", statErr), nil
	})
}

func describeClaim(pvc *corev1.PersistentVolumeClaim) string {
	if pvc == nil {
		return "unknown"
	}
	return framework.DescribeClaim(pvc)
}
