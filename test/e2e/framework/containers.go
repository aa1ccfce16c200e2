package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/cri"
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
// it skips that step and sends SIGKILL immediately (pkg/cri/server/container_stop.go, the same in
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
