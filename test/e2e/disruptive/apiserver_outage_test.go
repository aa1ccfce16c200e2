//go:build e2e

package disruptive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const (
	// outageLength is how long the API server process stays stopped. It stops listening at the
	// SIGTERM already and drains for up to 30 s (hack/cluster.sh then kills it), so the API is
	// away for between 30 s and a minute.
	outageLength = 30 * time.Second
	// outagePreStopSeconds is the CRR's preStop hook: it outlasts the wait for the pull to be
	// under way, so the daemon stops the container and the kubelet starts the new one while the
	// API server is away.
	outagePreStopSeconds = 20
	// outagePullTimeout is the pull's per-attempt timeout: the registry holds the first attempt
	// (stall/) until the daemon gives up on it in the middle of the outage; the retry then
	// pulls the image while the API server is still away, and only the status is left to write.
	outagePullTimeout = 20
)

// The API server is stopped for 30 s while the daemon runs a CRR (in its preStop hook) and a pull
// of an ImagePullJob (held by the registry), then started again. Neither kruise component may
// restart over it: not the daemon, not either kruise-controller replica (the leader cannot renew
// its Lease meanwhile), and no liveness probe may restart them either (the daemon's /healthz does
// not depend on the API server; the controller's fails only while it believes it leads on an
// expired Lease). Afterwards both finish their work: the CRR completes with the container
// stopped exactly once, and the ImagePullJob completes Succeeded with the image on the node.
func TestAPIServerOutage(t *testing.T) {
	ctx := framework.Context(t, 15*time.Minute)
	e := faultNewEnv(ctx, t, "apiserver-outage")
	daemon := resDaemonInstance(ctx, t, e)
	kruise := []resInstance{daemon}
	for _, p := range leaderWaitReplicasAvailable(ctx, t, e.f, 2*time.Minute) {
		kruise = append(kruise, resInstanceOf(t, &p, leaderContainer))
	}
	t.Logf("kruise before the outage: %v", kruise)

	// The CRR's pod first: it takes the longest to get ready, and the pull's attempt is timed.
	before := e.f.CreateRunningPod(ctx, t, resPreStopPod(e.f, e.ns, "web", outagePreStopSeconds, "main"))

	// In flight 1: a pull the registry holds until the daemon's attempt times out.
	image := e.faultFreshImage(ctx, t, "stall/")
	tag := outagePollTag(ctx, t, e, image)
	since := time.Now()
	job := framework.NewImagePullJob(e.ns, "pull", image)
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](outagePullTimeout), BackoffLimit: ptr.To[int32](3)}
	job.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](900)
	framework.CreateImagePullJob(ctx, t, e.c, job)

	// In flight 2: a CRR whose preStop hook runs into the outage.
	resCreateCRR(ctx, t, e.c, resCRR(e.ns, "r", "web", 60, "main"))

	framework.WaitFor(ctx, t, time.Minute, "tag Pulling on node "+e.node, func(context.Context) (bool, string, error) {
		return tag.seen(appsv1beta1.ImagePhasePulling), tag.summary(), nil
	})
	framework.WaitFor(ctx, t, time.Minute, "the registry holding a blob GET of "+image, func(context.Context) (bool, string, error) {
		held := framework.RegistryLogLines(t, e.faultRepoPath(image), "registry request held")
		return len(held) > 0, fmt.Sprintf("%d held GETs in %s", len(held), framework.RegistryLog), nil
	})
	framework.WaitCRR(ctx, t, e.c, e.ns, "r", time.Minute, "CRR r in main's preStop hook", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		st := resCRRState(c, "main")
		return st.Phase == appsv1alpha1.ContainerRecreateRequestRecreating && !st.IsKilled
	})

	// The outage. Only CRI is read meanwhile.
	stoppingAt := time.Now()
	e.f.StopComponent(ctx, t, framework.ComponentAPIServer)
	stoppedAt := time.Now()
	t.Logf("the API server's stop took %s", stoppedAt.Sub(stoppingAt).Round(time.Millisecond))
	if err := e.f.APIServerAnswers(ctx); !errors.Is(err, framework.ErrNoAnswer) {
		t.Fatalf("the API server still answers after its stop (err %v)", err)
	}
	outageWatchCRI(ctx, t, e, kruise, stoppingAt, stoppedAt.Add(outageLength))
	e.f.StartComponent(ctx, t, framework.ComponentAPIServer)
	startedAt := time.Now()
	t.Logf("the API server was away for %s (the process for %s)", startedAt.Sub(stoppingAt).Round(time.Millisecond),
		startedAt.Sub(stoppedAt).Round(time.Millisecond))

	e.f.WaitNodeReady(ctx, t, 2*time.Minute)
	done := resWaitCRRCompleted(ctx, t, e.c, e.ns, "r", "main")
	t.Logf("CRR completed %s after the API server came back: %s", time.Since(startedAt).Round(time.Millisecond), resDescribeCRR(done))
	resRequireRecreatedOnce(ctx, t, e.f, before, "main")
	if st := resCRRState(done, "main"); !st.IsKilled {
		// The stop happened during the outage; its status write failed and
		// was made again once the API server answered.
		t.Errorf("main's stop by the daemon is not recorded (isKilled false): %s", resDescribeCRR(done))
	}

	finished := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, "pull", faultJobTimeout)
	t.Logf("job finished %s after the API server came back: %s", time.Since(startedAt).Round(time.Millisecond), finished.Status.Message)
	e.faultRequireSucceeded(ctx, t, finished)
	recs := faultRecords(ctx, t, image, since, 0)
	t.Logf("PullImage calls: %v", recs)
	oks := 0
	for _, r := range recs {
		if r.Code == "OK" {
			oks++
		}
	}
	ok := recs[len(recs)-1]
	if ok.Code != "OK" || oks != 1 {
		t.Errorf("want exactly one successful PullImage call, the last; got %v", recs)
	}
	tag.require(ctx, t, e, ok)
	e.faultRequirePresent(ctx, t, image, ok.ImageRef)

	// Every kruise container is Ready again as the same instance it was before.
	faultWaitDaemonReady(ctx, t, e.f, e.node, 2*time.Minute, "after the outage")
	leaderWaitReplicasAvailable(ctx, t, e.f, 2*time.Minute)
	resRequireSame(ctx, t, e.f, kruise)
	outageLogProbeFailures(ctx, t, e.f, stoppedAt)
}

// outageLogProbeFailures logs the probe failures the kubelet reported for kruise's pods since
// from (the kubelet may not get every Event through after the outage, so they are not counted).
func outageLogProbeFailures(ctx context.Context, t *testing.T, f *framework.Framework, from time.Time) {
	t.Helper()
	events, err := f.Client.CoreV1().Events(framework.KruiseNamespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Unhealthy"})
	if err != nil {
		t.Logf("listing probe failure events: %v", err)
		return
	}
	for _, ev := range events.Items {
		last := ev.LastTimestamp.Time
		if last.IsZero() {
			last = ev.EventTime.Time
		}
		if last.Before(from.Add(-time.Second)) {
			continue
		}
		t.Logf("probe failure of %s (%dx, last %s): %s", ev.InvolvedObject.Name, ev.Count, last.Format(time.RFC3339), ev.Message)
	}
}

// outageWatchCRI reads kruise's containers through CRI until until (at least once) and
// reports every restart it sees. It does not stop at the first one: the outage goes on, and the
// rest of the test shows what else the restart broke or did not.
func outageWatchCRI(ctx context.Context, t *testing.T, e *faultEnv, kruise []resInstance, stoppedAt, until time.Time) {
	t.Helper()
	reported := map[string]bool{}
	for {
		ok, observed, err := resSameInCRI(ctx, e.rt, kruise)
		switch {
		case err != nil:
			t.Errorf("reading kruise's containers through CRI while the API server is down: %v", err)
		case !ok && !reported[observed]:
			reported[observed] = true
			t.Errorf("%s into the outage, a kruise container was restarted: %s", time.Since(stoppedAt).Round(time.Second), observed)
		}
		if time.Now().After(until) || err != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("watching kruise's containers during the outage: %v", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// outageTag follows the status of one image tag on the node by reading the NodeImage every 250 ms.
// A watch would not do: after the API server's restart its watch cache starts anew, so a watch
// cannot resume from an older resourceVersion (410 Gone) and framework.WatchNodeImageTag's ends
// there; polling just resumes when the API server is back.
type outageTag struct {
	mu      sync.Mutex
	history []string // each status seen, once per change
	phases  map[appsv1beta1.ImagePullPhase]bool
	// When Succeeded was first seen, and whether the runtime had the image then.
	succeededAt time.Time
	present     bool
	presentErr  error
}

func outagePollTag(ctx context.Context, t *testing.T, e *faultEnv, image string) *outageTag {
	t.Helper()
	repo, tagName := framework.SplitImage(image)
	o := &outageTag{phases: map[appsv1beta1.ImagePullPhase]bool{}}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if ni, err := e.c.AppsV1beta1().NodeImages().Get(pctx, e.node, metav1.GetOptions{}); err == nil {
				if st := framework.TagStatusesOf(ni, repo, tagName); len(st) > 0 {
					o.observe(pctx, e, image, st[len(st)-1])
				}
			}
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return o
}

func (o *outageTag) observe(ctx context.Context, e *faultEnv, image string, st appsv1beta1.ImageTagStatus) {
	o.mu.Lock()
	defer o.mu.Unlock()
	desc := fmt.Sprintf("v%d %s %q", st.Version, st.Phase, st.Message)
	if n := len(o.history); n == 0 || o.history[n-1] != desc {
		o.history = append(o.history, desc)
	}
	o.phases[st.Phase] = true
	if st.Phase == appsv1beta1.ImagePhaseSucceeded && o.succeededAt.IsZero() {
		o.succeededAt = time.Now()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, o.present, o.presentErr = e.rt.ImageStatus(cctx, image)
	}
}

func (o *outageTag) seen(phase appsv1beta1.ImagePullPhase) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.phases[phase]
}

func (o *outageTag) summary() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.history, " -> ")
}

// require checks what was seen of the tag against the one successful PullImage call ok: never
// Failed; Succeeded, if seen (the job may have finished and dropped the tag between two reads),
// only after ok and with the image in the runtime; and the tag, if still on the NodeImage,
// Succeeded with ok's image ID.
func (o *outageTag) require(ctx context.Context, t *testing.T, e *faultEnv, ok framework.PullRecord) {
	t.Helper()
	o.mu.Lock()
	failed, at, present, perr := o.phases[appsv1beta1.ImagePhaseFailed], o.succeededAt, o.present, o.presentErr
	o.mu.Unlock()
	t.Logf("statuses of the tag seen: %s", o.summary())
	if failed {
		t.Errorf("the tag was reported Failed on the way: %s", o.summary())
	}
	switch {
	case at.IsZero():
		t.Logf("Succeeded was not seen between two reads of the NodeImage")
	case !at.After(ok.Time):
		t.Errorf("Succeeded first seen at %s, before the successful PullImage call arrived at %s", at.Format(time.RFC3339Nano), ok.Time.Format(time.RFC3339Nano))
	case perr != nil || !present:
		t.Errorf("when Succeeded was first seen (%s) the runtime did not have the image (present=%t, err=%v)", at.Format(time.RFC3339Nano), present, perr)
	}
	ni, err := e.c.AppsV1beta1().NodeImages().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading NodeImage %s: %v", e.node, err)
	}
	repo, tagName := framework.SplitImage(ok.Image)
	if st := framework.TagStatusesOf(ni, repo, tagName); len(st) > 0 {
		if last := st[len(st)-1]; last.Phase != appsv1beta1.ImagePhaseSucceeded || last.ImageID != ok.ImageRef {
			t.Errorf("NodeImage %s shows the tag %s with image ID %q, want Succeeded with %s", e.node, last.Phase, last.ImageID, ok.ImageRef)
		}
	}
}
