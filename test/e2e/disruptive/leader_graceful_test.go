//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const (
	// handoverTimeout bounds the pod's deletion → another replica holds the Lease: the old leader
	// stops its controllers and releases at once, then a standby acquires at its next attempt
	// (every 2 s with up to 2.4 s of jitter); the rest is margin for a loaded machine.
	handoverTimeout = 40 * time.Second
	// handoverExitTimeout bounds the deletion → the old leader's container has exited (its log
	// stream ends): the pod's grace period is 10 s.
	handoverExitTimeout = time.Minute
	// handoverContainers are the containers of the pod whose CRRs are admitted as the leader stops.
	handoverContainers = 4
)

// The controller's log messages this test reads (pkg/controller).
const (
	logBecameLeader       = "Became leader, starting controllers"
	logStartingController = "Starting controller"
	logStoppingAll        = "Stopping the controllers; the lease is kept until they have stopped"
	logControllerStopped  = "Controller stopped"
	logAllStopped         = "Controllers stopped"
	logReleased           = "Released the leader-election lease"
	logNotStoppedInTime   = "Controllers did not stop within the grace period"
)

// The leading kruise-controller replica is stopped gracefully (its pod deleted with its grace
// period: SIGTERM, as in a rolling update or a drain) while work is in flight: an ImagePullJob
// handing an image to three fake nodes one at a time, with one node's pull open, and CRRs created
// just before, which its workers are admitting. The old leader must stop its controllers and
// wait for their workers before it gives the Lease up: its log shows every controller stopped
// before the release, the Lease goes holder → released → new holder with one transition, and the
// new leader acquires it, and starts acting, only after the old one's controllers had all
// stopped. The work then finishes under the new leader and nothing is done twice: each node is
// asked to pull once, each container is stopped once.
func TestLeaderGracefulHandover(t *testing.T) {
	ctx := framework.Context(t, 12*time.Minute)
	f := framework.New(t)
	c := f.KruiseClient(t)

	// 1. Two available replicas; which one leads. Its log is followed from here on: it is gone
	// with its pod.
	pods := leaderWaitReplicasAvailable(ctx, t, f, 2*time.Minute)
	leaderPod, before := leaderCurrent(ctx, t, f, pods)
	oldHolder := ptr.Deref(before.Spec.HolderIdentity, "")
	leases := leaderWatchLease(ctx, t, f)
	oldLog := f.FollowPodLogs(ctx, t, framework.KruiseNamespace, leaderPod.Name, leaderContainer)
	t.Logf("leader: pod %s (identity %s, leaseTransitions %d)", leaderPod.Name, oldHolder, ptr.Deref(before.Spec.LeaseTransitions, 0))

	// 2. In-flight work. An ImagePullJob over three fake nodes with parallelism 1: node 1 pulled,
	// node 2 pulling when the leader stops, node 3 waiting.
	ns := f.NewNamespace(ctx, t, "handover")
	j := leaderStartJob(ctx, t, f, c, ns, "e2e-handover-", "handover")

	// A pod of several containers, and one CRR for each, created right before the stop: the
	// leader's workers are admitting them as it stops.
	var containers []string
	for i := range handoverContainers {
		containers = append(containers, fmt.Sprintf("c%d", i))
	}
	web := f.CreateRunningPod(ctx, t, resRecordStops(f.BusyboxPod(ns, "web", containers...)))
	for _, ctr := range containers {
		resCreateCRR(ctx, t, c, resCRR(ns, "r-"+ctr, "web", 10, ctr))
	}

	// 3. Stop the leader gracefully: delete its pod with the pod's own grace period.
	if h := ptr.Deref(leaderGetLease(ctx, t, f).Spec.HolderIdentity, ""); h != oldHolder {
		t.Fatalf("the Lease changed hands before the stop: holder %s, want %s", h, oldHolder)
	}
	deletedAt := time.Now()
	if err := f.Client.CoreV1().Pods(framework.KruiseNamespace).Delete(ctx, leaderPod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the leader's pod %s: %v", leaderPod.Name, err)
	}
	t.Logf("deleted leader pod %s (grace period %ds)", leaderPod.Name, ptr.Deref(leaderPod.Spec.TerminationGracePeriodSeconds, 30))

	// 4. Another replica takes over, at once rather than when a lease runs out.
	var after *coordinationv1.Lease
	framework.WaitFor(ctx, t, handoverTimeout, "another replica to take over the Lease", func(ctx context.Context) (bool, string, error) {
		l, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		after = l
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != oldHolder, leaderDescribeLease(l), nil
	})
	newHolder := ptr.Deref(after.Spec.HolderIdentity, "")
	acquired := after.Spec.AcquireTime.Time
	t.Logf("HANDOVER: new holder %s acquired the Lease %s after the deletion", newHolder, acquired.Sub(deletedAt).Round(time.Millisecond))
	if got, want := ptr.Deref(after.Spec.LeaseTransitions, 0), ptr.Deref(before.Spec.LeaseTransitions, 0)+1; got != want {
		t.Errorf("leaseTransitions = %d after the handover, want %d", got, want)
	}

	// The old leader's container exits; its log is then complete.
	framework.WaitFor(ctx, t, handoverExitTimeout, "the old leader's container to exit", func(context.Context) (bool, string, error) {
		ended, err := oldLog.Ended()
		if err != nil {
			return false, "", fmt.Errorf("reading the old leader's log: %w", err)
		}
		lines := oldLog.Lines()
		return ended, fmt.Sprintf("%d lines, the last: %q", len(lines), lastOf(lines)), nil
	})
	old := handoverTerm(t, oldLog.Lines(), leaderPod.Name)
	t.Logf("old leader: %s", old)

	// The new leader's term, from its own log. The standby usually wins; the Deployment's
	// replacement pod sometimes does, as it campaigns the moment it starts while the standby
	// retries every 2 s: both are correct.
	var newPod corev1.Pod
	var newBecame framework.LogEntry
	framework.WaitFor(ctx, t, time.Minute, "the new leader to log that it leads", func(ctx context.Context) (bool, string, error) {
		p, desc, err := leaderFindPod(ctx, f, f.LiveControllerPods(ctx, t), newHolder)
		if p == nil || err != nil {
			return false, desc, err
		}
		newPod = *p
		text, err := f.PodLogs(ctx, framework.KruiseNamespace, p.Name, leaderContainer)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		// A standby that led before has logged it before too, under the same identity: the
		// term in question is its last one.
		newBecame = framework.LogEntry{}
		for _, e := range framework.LogEntries(strings.Split(text, "\n")) {
			if e.Msg == logBecameLeader && framework.LogValue(e.Line, "identity") == newHolder {
				newBecame = e
			}
		}
		if !newBecame.At.IsZero() && !newBecame.At.Before(deletedAt.Add(-time.Second)) {
			return true, newBecame.Line, nil
		}
		return false, fmt.Sprintf("pod %s has not logged %q as %s since the deletion (last: %q)", p.Name, logBecameLeader, newHolder, newBecame.Line), nil
	})
	if slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == newPod.Name }) {
		t.Logf("HANDOVER to the standby pod %s", newPod.Name)
	} else {
		t.Logf("HANDOVER to the Deployment's replacement pod %s, which campaigned as it started", newPod.Name)
	}

	// 5. The order of the handover, on the processes' own clocks (one host): every controller
	// of the old leader had stopped before it released the Lease, and before the new leader
	// acquired it and started its controllers. The Lease never left the old leader but by its
	// release.
	if !old.released.At.After(old.allStopped.At) && !old.released.At.Equal(old.allStopped.At) {
		t.Errorf("the old leader released the Lease (%s) before its controllers had stopped (%s)",
			old.released.At.Format(time.StampMicro), old.allStopped.At.Format(time.StampMicro))
	}
	if !acquired.After(old.allStopped.At) {
		t.Errorf("the new leader acquired the Lease at %s, before the old leader's controllers had all stopped (%s)",
			acquired.Format(time.StampMicro), old.allStopped.At.Format(time.StampMicro))
	}
	if !newBecame.At.After(old.allStopped.At) {
		t.Errorf("the new leader started its controllers at %s, before the old leader's had all stopped (%s)",
			newBecame.At.Format(time.StampMicro), old.allStopped.At.Format(time.StampMicro))
	}
	if hs := leases.holdersFrom(oldHolder); !slices.Equal(hs, []string{oldHolder, "", newHolder}) {
		t.Errorf("Lease holders seen from the old leader on: %q, want [old, released, new]", hs)
	}
	// The release as the Lease recorded it: the old leader writes its own clock's time into it.
	var releasedAt time.Time
	for _, r := range leases.all() {
		if r.holder == "" && r.spec.RenewTime != nil {
			releasedAt = r.spec.RenewTime.Time
			break
		}
	}
	switch {
	case releasedAt.IsZero():
		t.Errorf("no released state of the Lease was seen")
	case releasedAt.Before(old.allStopped.At):
		t.Errorf("the Lease was released at %s, before the old leader's controllers had all stopped (%s)",
			releasedAt.Format(time.StampMicro), old.allStopped.At.Format(time.StampMicro))
	case acquired.Before(releasedAt):
		t.Errorf("the new leader acquired the Lease at %s, before it was released (%s)", acquired.Format(time.StampMicro), releasedAt.Format(time.StampMicro))
	}
	t.Logf("ORDER: old controllers all stopped %s after the deletion; the Lease released %s later; the new leader acquired it %s and started %s after the release",
		old.allStopped.At.Sub(deletedAt).Round(time.Millisecond), releasedAt.Sub(old.allStopped.At).Round(time.Microsecond),
		acquired.Sub(releasedAt).Round(time.Millisecond), newBecame.At.Sub(releasedAt).Round(time.Millisecond))

	// 6. The work finishes under the new leader, each part done once. Node 2 still pulls: no
	// other node is asked, and node 2 is not asked again; then node 3 is handed out.
	j.finish(ctx, t, c)
	for _, ctr := range containers {
		resWaitCRRCompleted(ctx, t, c, ns, "r-"+ctr, ctr)
	}
	resRequireRecreatedOnce(ctx, t, f, web, containers...)
	crrs, err := c.AppsV1alpha1().ContainerRecreateRequests(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the CRRs: %v", err)
	}
	for _, crr := range crrs.Items {
		if crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] != string(web.UID) {
			t.Errorf("CRR %s was not admitted for pod web (labels %v)", crr.Name, crr.Labels)
		}
	}

	// 7. The Deployment is whole again, and the new leader kept the Lease.
	leaderWaitReplicasAvailable(ctx, t, f, leaderRestartTimeout)
	if h := ptr.Deref(leaderGetLease(ctx, t, f).Spec.HolderIdentity, ""); h != newHolder {
		t.Errorf("Lease holder at the end is %s, want the new leader %s", h, newHolder)
	}
}

// handoverOld is what the old leader's log says of its last term and its shutdown.
type handoverOld struct {
	started, stopped []string // controllers started in the last term, and those stopped
	stopping         framework.LogEntry
	allStopped       framework.LogEntry
	released         framework.LogEntry
}

func (o handoverOld) String() string {
	return fmt.Sprintf("controllers %v; shutdown began %s, all stopped %s, released %s", o.started,
		o.stopping.At.Format(time.StampMicro), o.allStopped.At.Format(time.StampMicro), o.released.At.Format(time.StampMicro))
}

// handoverTerm reads the old leader's log: its last term's controllers, and how it stopped them
// and released the Lease. It fails the test when the log does not show a complete, clean
// shutdown.
func handoverTerm(t *testing.T, lines []string, pod string) handoverOld {
	t.Helper()
	entries := framework.LogEntries(lines)
	term := -1
	for i, e := range entries {
		if e.Msg == logBecameLeader {
			term = i
		}
	}
	if term < 0 {
		t.Fatalf("the log of %s has no %q line: %d lines, the last: %q", pod, logBecameLeader, len(lines), lastOf(lines))
	}
	var o handoverOld
	found := map[string]*framework.LogEntry{logStoppingAll: &o.stopping, logAllStopped: &o.allStopped, logReleased: &o.released}
	for _, e := range entries[term:] {
		switch e.Msg {
		case logStartingController:
			o.started = append(o.started, framework.LogValue(e.Line, "controller"))
		case logControllerStopped:
			o.stopped = append(o.stopped, framework.LogValue(e.Line, "controller"))
		case logNotStoppedInTime:
			t.Errorf("the old leader's controllers did not stop within its grace period: %s", e.Line)
		default:
			if p, ok := found[e.Msg]; ok && p.At.IsZero() {
				*p = e
			}
		}
	}
	for msg, p := range found {
		if p.At.IsZero() {
			t.Fatalf("the log of %s has no %q line after it became leader; its last lines: %q", pod, msg, lastN(lines, 15))
		}
	}
	slices.Sort(o.started)
	slices.Sort(o.stopped)
	if len(o.started) == 0 || !slices.Equal(o.started, o.stopped) {
		t.Errorf("controllers started in the last term %v, stopped %v: want every one stopped", o.started, o.stopped)
	}
	for _, e := range entries[term:] {
		if e.Msg == logControllerStopped && e.At.After(o.allStopped.At) {
			t.Errorf("controller %s logged its stop after %q: %s", framework.LogValue(e.Line, "controller"), logAllStopped, e.Line)
		}
	}
	if framework.LogValue(o.released.Line, "identity") == "" {
		t.Errorf("the release line names no identity: %s", o.released.Line)
	}
	return o
}

func lastOf(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

func lastN(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	return lines[len(lines)-n:]
}
