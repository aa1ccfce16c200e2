//go:build e2e

package disruptive

import (
	"testing"
	"time"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Kill the daemon's container (SIGKILL) while its pull is in flight: the registry holds the
// first GET of each blob under stall/ until the client goes away, so the pull stays under way.
// After the kubelet restarts the daemon, the new one pulls the tag again (the next GETs are
// served) and reports Succeeded, with the image really in the runtime, never before the image
// existed, and the tag is not left in Pulling.
func TestPullFaultDaemonKilledMidPull(t *testing.T) {
	ctx := framework.Context(t, 14*time.Minute)
	e := faultNewEnv(ctx, t, "fault-kill")
	before := e.faultDaemonReadyAround(ctx, t)
	image := e.faultFreshImage(ctx, t, "stall/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	succeeded := e.faultCheckFirstSucceeded(w, image)
	since := time.Now()

	// No per-attempt timeout or deadline may cut in while the daemon is down and restarting.
	e.faultStartHeldPull(ctx, t, w, "killed", image)
	if recs := framework.PullRecordsFor(t, image, since); len(recs) != 0 {
		t.Fatalf("the pull ended before the kill: %v", recs)
	}

	daemon, _, err := faultDaemonPod(ctx, e.f, e.node)
	if err != nil || daemon == nil {
		t.Fatalf("finding the daemon pod of node %s: %v", e.node, err)
	}
	if daemon.UID != before.UID {
		t.Fatalf("the daemon pod changed during the test: %s, then %s", before.Name, daemon.Name)
	}
	killedAt := time.Now()
	oldID := framework.KillContainer(ctx, t, daemon, faultDaemonContainer)
	t.Logf("killed the daemon's container %s (pod %s) mid-pull", oldID, daemon.Name)

	// The killed daemon's call ends (its client went away) without success.
	killed := framework.WaitPullRecord(ctx, t, image, since, time.Minute, "the killed daemon's call ended", func(framework.PullRecord) bool { return true })
	if killed.Code == "OK" {
		t.Fatalf("the killed daemon's PullImage call succeeded: %s", killed)
	}
	t.Logf("the killed daemon's PullImage call ended: %s", killed)
	restarted := e.f.WaitContainerRestarted(ctx, t, framework.KruiseNamespace, daemon.Name, faultDaemonContainer, oldID, faultRestartTimeout)
	t.Logf("daemon ready again %s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), faultDescribeDaemon(restarted))

	done := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, "killed", faultJobTimeout)
	t.Logf("job finished %s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), done.Status.Message)
	e.faultRequireSucceeded(ctx, t, done)

	ok := faultOneOKPullAfter(ctx, t, image, since, killedAt, "the kill")
	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseSucceeded)
	if st.ImageID != ok.ImageRef {
		t.Errorf("NodeImage reports image ID %s, the successful PullImage call returned %s", st.ImageID, ok.ImageRef)
	}
	succeeded.require(t, w, e.node, ok)
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "gone while held"); lines != nil && len(lines) == 0 {
		t.Errorf("the registry never saw the killed pull's client go away")
	}
	e.faultRequirePresent(ctx, t, image, st.ImageID)
}
