//go:build e2e

package disruptive

import (
	"testing"
	"time"

	"github.com/nodekruise/kruise/pkg/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// crrKillPreStopSeconds is each container's preStop hook: long enough that the test sees the
// daemon in the second container's hook and kills it there, well before the hook ends.
const crrKillPreStopSeconds = 15

// The daemon is SIGKILLed in the middle of a CRR of two containers: it has stopped the first and
// is running the second's preStop hook. The kubelet restarts the daemon, which finishes the CRR
// from what the runtime and the pod show: the first container is not stopped again, the second
// is stopped (its hook run anew), and the CRR completes with both Succeeded — each container
// stopped exactly once (restartCount +1, not +2 and not +0).
func TestCRRDaemonKilledMidRecreate(t *testing.T) {
	ctx := framework.Context(t, 14*time.Minute)
	e := faultNewEnv(ctx, t, "crr-daemon-killed")
	daemon := e.faultDaemonReadyAround(ctx, t)
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
