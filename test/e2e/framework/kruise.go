package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// KruiseClient returns a typed client for the apps.kruise.io kinds.
func (f *Framework) KruiseClient(t testing.TB) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(f.Config)
	if err != nil {
		t.Fatalf("creating kruise client: %v", err)
	}
	return c
}

// BusyboxPod returns a pod whose containers (one per name) sleep and exit at once on SIGTERM.
func (f *Framework) BusyboxPod(namespace, name string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: c, Image: f.Image("public/busybox:1.35"),
			Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
		})
	}
	return pod
}

// RunningBusyboxPod creates BusyboxPod and waits until it is Running with every container started.
func (f *Framework) RunningBusyboxPod(ctx context.Context, t testing.TB, namespace, name string, containers ...string) *corev1.Pod {
	t.Helper()
	return f.CreateRunningPod(ctx, t, f.BusyboxPod(namespace, name, containers...))
}

// CreateRunningPod creates pod and waits until it is Running with every container started.
func (f *Framework) CreateRunningPod(ctx context.Context, t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	namespace, name := pod.Namespace, pod.Name
	if _, err := f.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", namespace, name, err)
	}
	var got *corev1.Pod
	WaitFor(ctx, t, 2*time.Minute, "pod "+name+" running", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = p
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(pod.Spec.Containers) {
			return false, "phase " + string(p.Status.Phase), nil
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.ContainerID == "" || st.State.Running == nil || !st.Ready {
				return false, "container " + st.Name + " not running and ready", nil
			}
		}
		return true, "running", nil
	})
	return got
}

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
