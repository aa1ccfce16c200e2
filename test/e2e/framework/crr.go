package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// WaitCRR polls a ContainerRecreateRequest until cond holds; the CRR must exist.
func WaitCRR(ctx context.Context, t testing.TB, c versioned.Interface, namespace, name string, timeout time.Duration, desc string,
	cond func(*appsv1alpha1.ContainerRecreateRequest) bool) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	var got *appsv1alpha1.ContainerRecreateRequest
	WaitFor(ctx, t, timeout, desc, func(ctx context.Context) (bool, string, error) {
		crr, err := c.AppsV1alpha1().ContainerRecreateRequests(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = crr
		return cond(crr), fmt.Sprintf("phase=%q message=%q labels=%v", crr.Status.Phase, crr.Status.Message, crr.Labels), nil
	})
	return got
}

// WaitCRRGone polls until the ContainerRecreateRequest no longer exists.
func WaitCRRGone(ctx context.Context, t testing.TB, c versioned.Interface, namespace, name string, timeout time.Duration) {
	t.Helper()
	WaitFor(ctx, t, timeout, "CRR "+name+" deleted", func(ctx context.Context) (bool, string, error) {
		crr, err := c.AppsV1alpha1().ContainerRecreateRequests(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("still there, phase %q", crr.Status.Phase), nil
	})
}
