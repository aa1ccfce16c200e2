//go:build e2e

package disruptive

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The daemon is SIGKILLed in the middle of a CRR of two containers: it has stopped the first and
// is running the second's preStop hook. The kubelet restarts the daemon, which finishes the CRR
// from what the runtime and the pod show: the first container is not stopped again, the second
// is stopped (its hook run anew), and the CRR completes with both Succeeded — each container
// stopped exactly once (restartCount +1, not +2 and not +0).
func TestCRRDaemonKilledMidRecreate(t *testing.T) {
	ctx := framework.Context(t, 14*time.Minute)
	e := faultNewEnv(ctx, t, "crr-daemon-killed")
	daemon := e.faultDaemonWithoutBackoff(ctx, t)
	before := e.f.CreateRunningPod(ctx, t, resPreStopPod(e.f, e.ns, "web", crrKillPreStopSeconds, "first", "second"))

	// Not ordered: the daemon stops the first container and goes straight on to the second.
	at := resStartSecondInHook(ctx, t, e)
	t.Logf("CRR before the kill: %s", resDescribeCRR(at))

	// The CRR is under way, so the daemon that runs it is up: find its pod again in case the
	// DaemonSet replaced it since the start of the test.
	if p, _, err := faultDaemonPod(ctx, e.f, e.node); err != nil || p == nil {
		t.Fatalf("finding the daemon pod of node %s: %v", e.node, err)
	} else {
		daemon = p
	}
	killedAt := time.Now()
	oldDaemon := framework.KillContainer(ctx, t, daemon, faultDaemonContainer)
	t.Logf("killed the daemon's container %s (pod %s) mid-CRR", oldDaemon, daemon.Name)

	// The kill must have landed in the second container's hook: its instance still runs.
	second := cri.RawContainerID(framework.ContainerStatusOf(before, "second").ContainerID)
	cs, err := e.rt.PodContainers(ctx, string(before.UID))
	if err != nil {
		t.Fatalf("listing the containers of pod web through CRI: %v", err)
	}
	if cur, ok := cri.Newest(cs, "second"); !ok || cur.ID != second || cur.State != cri.ContainerRunning {
		t.Fatalf("container second (%s) was no longer running when the daemon was killed (newest: %+v): the kill came too late to test anything", second, cur)
	}

	restarted := e.f.WaitContainerRestarted(ctx, t, framework.KruiseNamespace, daemon.Name, faultDaemonContainer, oldDaemon, faultRestartTimeout)
	t.Logf("daemon ready again %s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), faultDescribeDaemon(restarted))

	done := resWaitCRRCompleted(ctx, t, e.c, e.ns, "r", "first", "second")
	t.Logf("CRR completed %s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), resDescribeCRR(done))
	resRequireRecreatedOnce(ctx, t, e.f, before, "first", "second")
}

// faultDaemonWithoutBackoff returns the node's daemon pod, Ready, with no restart behind it. The
// kubelet restarts a container that died within the last 10 minutes only after its crash-loop
// backoff (10 s, 20 s, 40 s, ...), and other disruptive tests kill or stop the daemon too, while
// the controller ends a node's CRRs once its daemon has not renewed its heartbeat for 40 s: a
// daemon killed with a long backoff ahead loses the CRR to NoLiveDaemon, which is not what this
// test is about. A daemon pod that has restarted is therefore replaced first (the DaemonSet's new
// pod has no backoff).
func (e *faultEnv) faultDaemonWithoutBackoff(ctx context.Context, t *testing.T) *corev1.Pod {
	t.Helper()
	pod := e.faultDaemonReadyAround(ctx, t)
	st := framework.ContainerStatusOf(pod, faultDaemonContainer)
	if st == nil || st.RestartCount == 0 {
		return pod
	}
	t.Logf("replacing daemon pod %s, which has restarted %d times (a restart now would wait out the kubelet's backoff)", pod.Name, st.RestartCount)
	if err := e.f.Client.CoreV1().Pods(framework.KruiseNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting daemon pod %s: %v", pod.Name, err)
	}
	fresh := e.f.WaitDaemonPodReady(ctx, t, string(pod.UID), faultRestartTimeout)
	framework.WaitDaemonCheck(ctx, t, "cri", true, time.Minute)
	return fresh
}
