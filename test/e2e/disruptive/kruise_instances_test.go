//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// resInstance is one running instance of a container of kruise's own pods.
type resInstance struct {
	pod       string
	uid       string
	container string
	id        string // bare CRI ID
	restarts  int32
}

func (i resInstance) String() string {
	return fmt.Sprintf("%s[%s] %s restarts=%d", i.pod, i.container, i.id, i.restarts)
}

// resInstanceOf records the running instance of container in pod.
func resInstanceOf(t *testing.T, pod *corev1.Pod, container string) resInstance {
	t.Helper()
	st := framework.ContainerStatusOf(pod, container)
	if st == nil || st.State.Running == nil || st.ContainerID == "" {
		t.Fatalf("container %s of pod %s/%s is not running", container, pod.Namespace, pod.Name)
	}
	return resInstance{pod: pod.Name, uid: string(pod.UID), container: container, id: cri.RawContainerID(st.ContainerID), restarts: st.RestartCount}
}

// resSameInCRI reports whether each instance still runs in the runtime as the newest instance of
// its container: what a restart would change, readable while the API server is down.
func resSameInCRI(ctx context.Context, rt cri.Runtime, want []resInstance) (bool, string, error) {
	var problems []string
	for _, w := range want {
		cs, err := rt.PodContainers(ctx, w.uid)
		if err != nil {
			return false, "", fmt.Errorf("listing the containers of pod %s through CRI: %w", w.pod, err)
		}
		cur, found := cri.Newest(cs, w.container)
		switch {
		case !found:
			problems = append(problems, fmt.Sprintf("%s: no container in the runtime", w))
		case cur.ID != w.id:
			problems = append(problems, fmt.Sprintf("%s: the runtime now runs instance %s (attempt %d)", w, cur.ID, cur.Attempt))
		case cur.State != cri.ContainerRunning:
			problems = append(problems, fmt.Sprintf("%s: the instance is %v in the runtime", w, cur.State))
		}
	}
	return len(problems) == 0, strings.Join(problems, "; "), nil
}

// resRequireSame checks through the API that each pod is the same one and its container the same
// running instance with the same restart count.
func resRequireSame(ctx context.Context, t *testing.T, f *framework.Framework, want []resInstance) {
	t.Helper()
	for _, w := range want {
		p, err := f.Client.CoreV1().Pods(framework.KruiseNamespace).Get(ctx, w.pod, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: reading the pod: %v", w, err)
			continue
		}
		st := framework.ContainerStatusOf(p, w.container)
		switch {
		case string(p.UID) != w.uid:
			t.Errorf("%s: the pod was replaced (uid %s, was %s)", w, p.UID, w.uid)
		case st == nil:
			t.Errorf("%s: no status of the container", w)
		case cri.RawContainerID(st.ContainerID) != w.id || st.RestartCount != w.restarts:
			t.Errorf("%s was restarted: now instance %s with restartCount %d (last termination %+v)", w,
				cri.RawContainerID(st.ContainerID), st.RestartCount, st.LastTerminationState.Terminated)
		}
	}
}

// resDaemonInstance waits for the node's daemon to be Ready and records its instance, after
// checking that its /readyz answers on the host with every check passing.
func resDaemonInstance(ctx context.Context, t *testing.T, e *faultEnv) resInstance {
	t.Helper()
	pod := faultWaitDaemonReady(ctx, t, e.f, e.node, faultRestartTimeout, "before the test")
	framework.WaitDaemonCheck(ctx, t, "cri", true, time.Minute)
	return resInstanceOf(t, pod, faultDaemonContainer)
}
