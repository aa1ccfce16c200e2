package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// ExitCodeSIGKILL is the exit code the kubelet reports for a container killed by SIGKILL (128+9).
const ExitCodeSIGKILL = 137

// KillContainer kills the running instance of one container of pod the way a crash would: the
// process gets SIGKILL at once, with no preStop hook, no SIGTERM and no grace period, so it can
// clean nothing up (a leader-elected controller cannot release its Lease, for instance). It
// returns the killed container's ID (without the "containerd://" prefix) once the runtime reports
// the container exited.
//
// The kill is a CRI StopContainer with a timeout of 0, sent straight to the runtime behind the
// kubelet's back. containerd's CRI plugin sends the stop signal (SIGTERM, or the image's
// STOPSIGNAL) and waits for the process only when the timeout is above zero; with a zero timeout
// it skips that step and sends SIGKILL immediately (pkg/daemon/cri/server/container_stop.go, the same in
// 1.6 and 1.7). The kubelet then sees an exit it did not ask for (code 137) and restarts the
// container as the pod's restartPolicy says, with its usual crash-loop backoff (none for the first
// restart, then 10 s, 20 s, 40 s ... for the same container within 10 minutes).
func KillContainer(ctx context.Context, t testing.TB, pod *corev1.Pod, container string) string {
	t.Helper()
	st := ContainerStatusOf(pod, container)
	if st == nil || st.ContainerID == "" || st.State.Running == nil {
		t.Fatalf("KillContainer: container %s of pod %s/%s is not running: %s", container, pod.Namespace, pod.Name, describePod(pod))
	}
	id := cri.RawContainerID(st.ContainerID)
	rt := CRI(ctx, t)
	// Zero timeout: SIGKILL at once (see above). StopContainer returns once the process is gone.
	if err := rt.StopContainer(ctx, id, 0); err != nil {
		t.Fatalf("KillContainer: killing container %s (%s) of pod %s/%s: %v", container, id, pod.Namespace, pod.Name, err)
	}
	cs, err := rt.PodContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatalf("KillContainer: listing the containers of pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	for _, c := range cs {
		if c.ID == id {
			if c.State == cri.ContainerRunning {
				t.Fatalf("KillContainer: container %s (%s) of pod %s/%s still running after StopContainer", container, id, pod.Namespace, pod.Name)
			}
			return id
		}
	}
	// The kubelet may already have removed it; the runtime answered StopContainer, so it is gone.
	return id
}

// WaitContainerRestarted waits until the named container of the pod runs again as a new instance
// (a container ID other than oldID) and is ready, and returns the pod. The caller checks the
// restart count and the last termination state it wants.
func (f *Framework) WaitContainerRestarted(ctx context.Context, t testing.TB, namespace, name, container, oldID string,
	timeout time.Duration) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	WaitFor(ctx, t, timeout, fmt.Sprintf("container %s of pod %s/%s restarted and ready", container, namespace, name),
		func(ctx context.Context) (bool, string, error) {
			p, err := f.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			got = p
			st := ContainerStatusOf(p, container)
			if st == nil {
				return false, describePod(p), nil
			}
			restarted := st.ContainerID != "" && cri.RawContainerID(st.ContainerID) != oldID
			return restarted && st.State.Running != nil && st.Ready,
				fmt.Sprintf("restartCount=%d containerID=%s; %s", st.RestartCount, st.ContainerID, describePod(p)), nil
		})
	return got
}

// DescribeContainerStatus says what the kubelet reports of one container: restart count, the
// instance and its state, and how the instance before it ended (exit code, reason, times), which
// tells a stop (exit 0 or 143 after SIGTERM, 137 after SIGKILL) from an instance that failed to
// start (a StartError) or a crash.
func DescribeContainerStatus(st *corev1.ContainerStatus) string {
	if st == nil {
		return "no status"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s restartCount=%d id=%s", st.Name, st.RestartCount, shortID(st.ContainerID))
	switch s := st.State; {
	case s.Running != nil:
		fmt.Fprintf(&b, " running since %s ready=%t", s.Running.StartedAt.Format(time.TimeOnly), st.Ready)
	case s.Waiting != nil:
		fmt.Fprintf(&b, " waiting(%s: %s)", s.Waiting.Reason, s.Waiting.Message)
	case s.Terminated != nil:
		fmt.Fprintf(&b, " terminated(%s)", describeTermination(s.Terminated))
	}
	if last := st.LastTerminationState.Terminated; last != nil {
		fmt.Fprintf(&b, " last=%s(%s)", shortID(last.ContainerID), describeTermination(last))
	}
	return b.String()
}

func describeTermination(t *corev1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exit %d %s %s-%s", t.ExitCode, t.Reason, t.StartedAt.Format(time.TimeOnly), t.FinishedAt.Format(time.TimeOnly))
	if t.Message != "" {
		s += ": " + t.Message
	}
	return s
}

// shortID is a container ID without its runtime prefix, cut to 12 characters.
func shortID(id string) string {
	id = cri.RawContainerID(id)
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

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

// ContainerStatusOf returns the status of the named regular container, or nil.
func ContainerStatusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	return named(pod.Status.ContainerStatuses, name, func(c *corev1.ContainerStatus) string { return c.Name })
}

// ContainerSpecOf returns the spec of the named regular container, or nil.
func ContainerSpecOf(pod *corev1.Pod, name string) *corev1.Container {
	return named(pod.Spec.Containers, name, func(c *corev1.Container) string { return c.Name })
}

// InitContainerStatusOf returns the status of the named init container (a native sidecar's
// included), or nil.
func InitContainerStatusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	return named(pod.Status.InitContainerStatuses, name, func(c *corev1.ContainerStatus) string { return c.Name })
}

// InitContainerSpecOf returns the spec of the named init container, or nil.
func InitContainerSpecOf(pod *corev1.Pod, name string) *corev1.Container {
	return named(pod.Spec.InitContainers, name, func(c *corev1.Container) string { return c.Name })
}

// named is the element of items whose nameOf is name, or nil.
func named[T any](items []T, name string, nameOf func(*T) string) *T {
	for i := range items {
		if nameOf(&items[i]) == name {
			return &items[i]
		}
	}
	return nil
}
