package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// defaultClassAnnotation makes a StorageClass the one a claim without storageClassName gets.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// defaultClass is the StorageClass of the provisioner's volumes.
func defaultClass(name, provisioner string) *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	expand := true
	return &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name, Annotations: map[string]string{defaultClassAnnotation: "true"}},
		Provisioner:          provisioner,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: &expand,
	}
}

// classUpdate is what to write so that existing becomes want, if anything. Only the fields the API
// lets change (the default annotation, allowVolumeExpansion) are brought back; a class of the same
// name that differs in the others is someone else's, and an error.
func classUpdate(existing, want *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	if existing.Provisioner != want.Provisioner || !sameReclaim(existing, want) || !sameBinding(existing, want) {
		return nil, fmt.Errorf("StorageClass %s exists with provisioner %s, reclaim policy %v and binding mode %v: delete it or choose another name",
			existing.Name, existing.Provisioner, deref(existing.ReclaimPolicy), deref(existing.VolumeBindingMode))
	}
	changed := existing.Annotations[defaultClassAnnotation] != "true" ||
		existing.AllowVolumeExpansion == nil || *existing.AllowVolumeExpansion != *want.AllowVolumeExpansion
	if !changed {
		return nil, nil
	}
	upd := existing.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[defaultClassAnnotation] = "true"
	upd.AllowVolumeExpansion = want.AllowVolumeExpansion
	return upd, nil
}

// ensureClassPatiently is ensureClass tried every interval for up to timeout: at start the API
// server may still be coming up (or be restarted by a test), which is no reason to exit.
func ensureClassPatiently(ctx context.Context, client kubernetes.Interface, want *storagev1.StorageClass, interval, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		last = ensureClass(ctx, client, want)
		if last != nil {
			klog.FromContext(ctx).Info("Applying the StorageClass failed; trying again", "name", want.Name, "err", last)
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// ensureClass creates want, or updates the class of its name as classUpdate says.
func ensureClass(ctx context.Context, client kubernetes.Interface, want *storagev1.StorageClass) error {
	logger := klog.FromContext(ctx)
	classes := client.StorageV1().StorageClasses()
	existing, err := classes.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := classes.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating StorageClass %s: %w", want.Name, err)
		}
		logger.Info("Created the default StorageClass", "name", want.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading StorageClass %s: %w", want.Name, err)
	}
	upd, err := classUpdate(existing, want)
	if err != nil || upd == nil {
		return err
	}
	if _, err := classes.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating StorageClass %s: %w", want.Name, err)
	}
	logger.Info("Made the StorageClass the expandable default again", "name", want.Name)
	return nil
}

// sameReclaim: the API server defaults an unset reclaim policy to Delete.
func sameReclaim(a, b *storagev1.StorageClass) bool {
	return orDefault(a.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete) == orDefault(b.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete)
}

// sameBinding: the API server defaults an unset binding mode to Immediate.
func sameBinding(a, b *storagev1.StorageClass) bool {
	return orDefault(a.VolumeBindingMode, storagev1.VolumeBindingImmediate) == orDefault(b.VolumeBindingMode, storagev1.VolumeBindingImmediate)
}

func orDefault[T any](p *T, d T) T {
	if p == nil {
		return d
	}
	return *p
}

func deref[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}
