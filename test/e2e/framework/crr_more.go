package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/cri"
)

// DaemonSelector selects the kruise-daemon pods.
const DaemonSelector = "app.kubernetes.io/name=kruise-daemon"

// CRI connects to the node's container runtime, which the e2e tests share the machine with
// (env KRUISE_E2E_CRI_ENDPOINT, default the local cluster's containerd), and closes it when the
// test ends.
func CRI(ctx context.Context, t testing.TB) cri.Runtime {
	t.Helper()
	endpoint := envOr("KRUISE_E2E_CRI_ENDPOINT", "/var/tmp/kruise-local/containerd/containerd.sock")
	rt, _, err := cri.Connect(ctx, endpoint, 10*time.Second)
	if err != nil {
		t.Fatalf("connecting to the container runtime at %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// PreviousPodLogs returns the logs of the previous instance of one container of a pod.
func (f *Framework) PreviousPodLogs(ctx context.Context, namespace, pod, container string) (string, error) {
	raw, err := f.Client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: true}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("previous logs of %s/%s[%s]: %w", namespace, pod, container, err)
	}
	return string(raw), nil
}

// WaitDaemonPodReady waits until a kruise-daemon pod that is not being deleted, and whose UID is
// not notUID, is Ready, and returns it.
func (f *Framework) WaitDaemonPodReady(ctx context.Context, t testing.TB, notUID string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	WaitFor(ctx, t, timeout, "a Ready kruise-daemon pod", func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: DaemonSelector})
		if err != nil {
			return false, "", err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if string(p.UID) == notUID || p.DeletionTimestamp != nil {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					got = p
					return true, "ready", nil
				}
			}
		}
		return false, f.DescribePods(ctx, KruiseNamespace, DaemonSelector), nil
	})
	return got
}

// DaemonPodOn returns the kruise-daemon pod of node that is not being deleted, or nil when there
// is none (between a kill and the DaemonSet's replacement, for instance).
func (f *Framework) DaemonPodOn(ctx context.Context, node string) (*corev1.Pod, error) {
	pods, err := f.Client.CoreV1().Pods(KruiseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: DaemonSelector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, nil
}
