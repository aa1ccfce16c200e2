package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultStorageClass is the local cluster's default StorageClass, served by localpv
// (hack/tools/localpv): a claim without storageClassName gets it.
const DefaultStorageClass = "localpv"

// VolumesDir is where localpv makes each volume's directory, named after its PersistentVolume.
var VolumesDir = envOr("KRUISE_E2E_VOLUMES_DIR", "/var/tmp/kruise-local/volumes")

// WaitClaim waits until cond holds for the PVC namespace/name and returns the PVC.
func (f *Framework) WaitClaim(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration, desc string,
	cond func(*corev1.PersistentVolumeClaim) bool) *corev1.PersistentVolumeClaim {
	t.Helper()
	var got *corev1.PersistentVolumeClaim
	WaitFor(ctx, t, timeout, "PVC "+name+" "+desc, func(ctx context.Context) (bool, string, error) {
		pvc, err := f.Client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = pvc
		return cond(pvc), DescribeClaim(pvc), nil
	})
	return got
}

// DescribeClaim is a PVC's phase, volume, request, capacity and conditions on one line.
func DescribeClaim(pvc *corev1.PersistentVolumeClaim) string {
	req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	var conds []string
	for _, c := range pvc.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return fmt.Sprintf("phase %s, volume %q, request %s, capacity %s, conditions %v, allocated statuses %v",
		pvc.Status.Phase, pvc.Spec.VolumeName, req.String(), capacity.String(), conds, pvc.Status.AllocatedResourceStatuses)
}
