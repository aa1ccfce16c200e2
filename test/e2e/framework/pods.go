package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BusyboxContainer is a busybox container named name that sleeps and exits at once on SIGTERM.
func (f *Framework) BusyboxContainer(name string) corev1.Container {
	return corev1.Container{Name: name, Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", EmptySidecarScript}}
}

// BusyboxPod returns a pod whose containers (one BusyboxContainer per name) sleep and exit at
// once on SIGTERM.
func (f *Framework) BusyboxPod(namespace, name string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, f.BusyboxContainer(c))
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

// WaitPod polls the pod until cond holds and returns it; cond also says what it saw.
func (f *Framework) WaitPod(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration, desc string,
	cond func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	WaitFor(ctx, t, timeout, fmt.Sprintf("pod %s/%s: %s", namespace, name, desc), func(ctx context.Context) (bool, string, error) {
		pod, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = pod
		ok, err := cond(pod)
		if err != nil {
			return false, "", fmt.Errorf("%w; pod: %s", err, DescribeSidecarPod(pod))
		}
		return ok, DescribeSidecarPod(pod), nil
	})
	return got
}

// WaitPodPhase waits until the pod is in phase, failing early when it reaches another terminal
// phase.
func (f *Framework) WaitPodPhase(ctx context.Context, t testing.TB, namespace, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	t.Helper()
	return f.WaitPod(ctx, t, namespace, name, timeout, "phase "+string(phase), func(pod *corev1.Pod) (bool, error) {
		switch p := pod.Status.Phase; {
		case p == phase:
			return true, nil
		case p == corev1.PodSucceeded || p == corev1.PodFailed:
			return false, fmt.Errorf("pod reached phase %s, want %s", p, phase)
		}
		return false, nil
	})
}

// WaitContainersTerminated waits until every named container of the pod is terminated.
func (f *Framework) WaitContainersTerminated(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration, containers ...string) *corev1.Pod {
	t.Helper()
	return f.WaitPod(ctx, t, namespace, name, timeout, fmt.Sprintf("containers %v terminated", containers), func(pod *corev1.Pod) (bool, error) {
		for _, c := range containers {
			st := ContainerStatusOf(pod, c)
			if st == nil || st.State.Terminated == nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// PodConditionOf returns the pod's condition of type ct, or nil.
func PodConditionOf(pod *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ct {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// DescribeCondition is a condition's status with its reason in parentheses, if any, or "-"
// for none: one field of a line that traces a pod.
func DescribeCondition(c *corev1.PodCondition) string {
	switch {
	case c == nil:
		return "-"
	case c.Reason == "":
		return string(c.Status)
	}
	return string(c.Status) + "(" + c.Reason + ")"
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	c := PodConditionOf(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// DeletePodNow deletes the pod with grace period 0 when the test ends (needed for pods on nodes
// without a kubelet, which nobody else would finish deleting).
func (f *Framework) DeletePodNow(t testing.TB, namespace, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := f.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pod %s/%s: %v", namespace, name, err)
		}
	})
}

// WaitPodWaitingReason waits until some container of the pod is waiting with one of reasons and
// returns that container's state message.
func (f *Framework) WaitPodWaitingReason(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration, reasons ...string) string {
	t.Helper()
	var msg string
	WaitFor(ctx, t, timeout, fmt.Sprintf("pod %s/%s waiting with %v", namespace, name, reasons), func(ctx context.Context) (bool, string, error) {
		pod, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				for _, r := range reasons {
					if w.Reason == r {
						msg = w.Message
						return true, r, nil
					}
				}
			}
		}
		return false, describePod(pod), nil
	})
	return msg
}

// DescribePods summarises the phase and container states of the pods matching selector, for
// failure messages.
func (f *Framework) DescribePods(ctx context.Context, namespace, selector string) string {
	pods, err := f.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "listing pods: " + err.Error()
	}
	var parts []string
	for i := range pods.Items {
		parts = append(parts, describePod(&pods.Items[i]))
	}
	if len(parts) == 0 {
		return "no pods"
	}
	return strings.Join(parts, "; ")
}

func describePod(pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s", pod.Name, pod.Status.Phase)
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, " %s=waiting(%s: %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Running != nil:
			fmt.Fprintf(&b, " %s=running(ready=%t)", cs.Name, cs.Ready)
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, " %s=terminated(%d %s)", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		}
	}
	return b.String()
}
