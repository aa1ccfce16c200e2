//go:build e2e

package disruptive

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// kruise-controller's leader election as deploy/ sets it up.
const (
	leaderLease      = "kruise-controller"
	leaderDeployment = "kruise-controller"
	leaderSelector   = "app.kubernetes.io/name=kruise-controller"
	leaderContainer  = "controller"
	// leaderFakeNodeLabel marks this test's fake nodes (value: a random suffix per run).
	leaderFakeNodeLabel = "kruise.e2e/leader-failover"

	// leaderTakeoverTimeout bounds kill → another replica holds the Lease: after a crash the
	// standby must wait out the lease duration (15 s) from the last renewal it saw, then its next
	// attempt comes within the retry period with jitter (2 s × 2.2); the rest is margin.
	leaderTakeoverTimeout = 40 * time.Second
	// leaderRestartTimeout bounds kill → the killed container running and Ready again. The
	// kubelet restarts a container that dies for the first time at once, but one that dies again
	// within 10 minutes only after its crash-loop backoff (10 s, 20 s, 40 s, ...): runs of this
	// test in a row kill the two replicas in turn. Then the readiness probe (every 5 s) must pass.
	leaderRestartTimeout = 4 * time.Minute
	// leaderStepTimeout bounds one step of the job: the leader reacting to a NodeImage change.
	leaderStepTimeout = time.Minute
	// leaderQuietWindow is how long the test watches the new leader with node 2's pull still in
	// flight, to see that it hands out no other node and does not ask node 2 again.
	leaderQuietWindow = 5 * time.Second
)

// Kill the leading kruise-controller replica like a crash (SIGKILL: it cannot release its Lease)
// in the middle of an ImagePullJob that hands an image to three nodes one at a time, and watch
// another replica (normally the standby) take over once the lease has run out and finish the job:
// the node whose pull was in flight is not asked again, the last node is handed out by the new
// leader, each node pulls exactly once and never two at once. The kubelet restarts the killed
// container; the Lease stays with the new leader and every other replica follows it. The test
// plays the daemons of three fake nodes, so it sets the pace of the job.
func TestLeaderFailoverFinishesInFlightWork(t *testing.T) {
	ctx := framework.Context(t, 12*time.Minute)
	f := framework.New(t)
	c := f.KruiseClient(t)

	// 1. Two available replicas; which one leads.
	pods := leaderWaitReplicasAvailable(ctx, t, f, 2*time.Minute)
	leaderPod, before := leaderCurrent(ctx, t, f, pods)
	oldHolder := ptr.Deref(before.Spec.HolderIdentity, "")
	// Every state of the Lease from here on: it must never be released, and after the takeover
	// never leave the new leader.
	leases := leaderWatchLease(ctx, t, f)
	var standbys []string
	for _, p := range pods {
		if p.Name != leaderPod.Name {
			standbys = append(standbys, p.Name)
		}
	}
	t.Logf("leader: pod %s (identity %s, leaseTransitions %d); standby: %v", leaderPod.Name, oldHolder,
		ptr.Deref(before.Spec.LeaseTransitions, 0), standbys)

	// 2. In-flight work: an ImagePullJob over three fake nodes with parallelism 1.
	ns := f.NewNamespace(ctx, t, "leader")
	j := leaderStartJob(ctx, t, f, c, ns, "e2e-leader-", "failover")
	if leaderHandedOut(j.w, j.n3, j.job.UID) {
		t.Fatalf("node %s was asked while %s still pulls: %s", j.n3, j.n2, leaderDescribeNodes(j.w, j.nodes))
	}
	t.Logf("node %s pulled; node %s pulling (version %d); node %s waiting", j.n1, j.n2, j.n2Version, j.n3)

	// 3. Crash the leader.
	leaderPod = *leaderGetPod(ctx, t, f, leaderPod.Name)
	if h := ptr.Deref(leaderGetLease(ctx, t, f).Spec.HolderIdentity, ""); h != oldHolder {
		t.Fatalf("the Lease changed hands before the kill: holder %s, want %s", h, oldHolder)
	}
	leaderStatus := framework.ContainerStatusOf(&leaderPod, leaderContainer)
	if leaderStatus == nil {
		t.Fatalf("pod %s has no status of container %s", leaderPod.Name, leaderContainer)
	}
	restartsBefore := leaderStatus.RestartCount
	// The process dies within milliseconds of the call (StopContainer returns once it is gone).
	killedAt := time.Now()
	killedID := framework.KillContainer(ctx, t, &leaderPod, leaderContainer)
	// The dead leader renews no more: this is its last renewal.
	final := leaderGetLease(ctx, t, f)
	lastRenew := final.Spec.RenewTime.Time
	leaseDuration := time.Duration(ptr.Deref(final.Spec.LeaseDurationSeconds, 0)) * time.Second
	t.Logf("killed container %s of leader pod %s (restartCount was %d); its last renewal %s before the kill, lease %s",
		killedID, leaderPod.Name, restartsBefore, killedAt.Sub(lastRenew).Round(time.Millisecond), leaseDuration)

	// 4. Another replica takes over once the lease has run out.
	var after *coordinationv1.Lease
	framework.WaitFor(ctx, t, leaderTakeoverTimeout, "another replica to take over the Lease", func(ctx context.Context) (bool, string, error) {
		l, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		after = l
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != oldHolder, leaderDescribeLease(l), nil
	})
	observed := time.Since(killedAt)
	newHolder := ptr.Deref(after.Spec.HolderIdentity, "")
	acquired := after.Spec.AcquireTime.Time
	t.Logf("TAKEOVER: new holder %s acquired the Lease %s after the kill (observed after %s); the dead leader's lease ran out %s after the kill",
		newHolder, acquired.Sub(killedAt).Round(time.Millisecond), observed.Round(time.Millisecond),
		lastRenew.Add(leaseDuration).Sub(killedAt).Round(time.Millisecond))
	if got, want := ptr.Deref(after.Spec.LeaseTransitions, 0), ptr.Deref(before.Spec.LeaseTransitions, 0)+1; got != want {
		t.Errorf("leaseTransitions = %d after the takeover, want %d", got, want)
	}
	// A crash releases nothing: the new holder had to wait until the lease ran out (the 1 s
	// slack only keeps this check from depending on how the times are rounded).
	if waited := acquired.Sub(lastRenew); waited < leaseDuration-time.Second {
		t.Errorf("the Lease was taken %s after the dead leader's last renewal, before its duration %s ran out", waited, leaseDuration)
	}
	if r := leases.released(); r != "" {
		t.Errorf("the killed leader released the Lease (a crash cannot): %s", r)
	}
	// Which replica won. After a crash every candidate waits out the lease from when it first saw
	// it, and client-go gives a standby that has waited long no priority: the standby saw the last
	// renewal first, but the kubelet restarts a container that crashes for the first time within
	// about a second, and the new process competes from its start. The standby usually wins, by a
	// second or two (a candidate retries every 2 s plus up to 2.4 s of jitter); the restarted
	// process sometimes does. Both are correct failovers: the dead process's identity is gone for
	// good, and the checks below hold for either.
	newPod := leaderPodOf(ctx, t, f, f.LiveControllerPods(ctx, t), newHolder)
	if newPod.Name == leaderPod.Name {
		t.Logf("TAKEOVER by the killed pod %s's restarted container (identity %s): it won the race against the standby %v",
			leaderPod.Name, newHolder, standbys)
	} else {
		t.Logf("TAKEOVER by the standby pod %s", newPod.Name)
	}

	// The new leader resumes the job where the old one left it: node 2 still pulls, so no other
	// node is asked, and node 2 is not asked again.
	j.finish(ctx, t, c)

	// The killed container comes back (restartCount + 1, killed by SIGKILL) and is Ready.
	restarted := f.WaitContainerRestarted(ctx, t, framework.KruiseNamespace, leaderPod.Name, leaderContainer, killedID, leaderRestartTimeout)
	st := framework.ContainerStatusOf(restarted, leaderContainer)
	if st.RestartCount != restartsBefore+1 {
		t.Errorf("restartCount of the killed container = %d, want %d", st.RestartCount, restartsBefore+1)
	}
	if term := st.LastTerminationState.Terminated; term == nil || term.ExitCode != framework.ExitCodeSIGKILL {
		t.Errorf("last termination of the killed container = %+v, want exit code %d (SIGKILL)", term, framework.ExitCodeSIGKILL)
	}
	if st.State.Running != nil {
		t.Logf("killed container running again %s after the kill (startedAt has 1 s resolution)",
			st.State.Running.StartedAt.Sub(killedAt.Truncate(time.Second)))
	}

	// 5. The Deployment is whole again; every other replica stands by, following the new leader,
	// which has kept the Lease all along.
	pods = leaderWaitReplicasAvailable(ctx, t, f, leaderRestartTimeout)
	for _, p := range pods {
		if p.Name == newPod.Name {
			continue
		}
		framework.WaitFor(ctx, t, leaderStepTimeout, "replica "+p.Name+" to follow leader "+newHolder, func(ctx context.Context) (bool, string, error) {
			logs, err := f.PodLogs(ctx, framework.KruiseNamespace, p.Name, leaderContainer)
			if err != nil {
				return false, "", err
			}
			// A standby logs each new leader it sees ("Another replica leads; standing by").
			return strings.Contains(logs, newHolder), "its log does not name " + newHolder + " yet", nil
		})
	}
	end := leaderGetLease(ctx, t, f)
	if h := ptr.Deref(end.Spec.HolderIdentity, ""); h != newHolder {
		t.Errorf("Lease holder at the end is %s, want the new leader %s", h, newHolder)
	}
	if hs := leases.holdersFrom(newHolder); !slices.Equal(hs, []string{newHolder}) {
		t.Errorf("Lease holders seen since the takeover: %v, want only %s", hs, newHolder)
	}
}
