//go:build e2e

package disruptive

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Pulls from a registry that misbehaves (the fault prefixes of test/registry); a daemon killed in
// the middle of a pull is in pull_daemon_killed_test.go. Each test checks that no pull is lost
// and none is reported Succeeded that did not happen.

// faultJob is an ImagePullJob of image on the real node with backoffLimit retries.
func (e *faultEnv) faultJob(name, image string, backoffLimit int32) *appsv1beta1.ImagePullJob {
	job := framework.NewImagePullJob(e.ns, name, image)
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To(backoffLimit)}
	return job
}

// faultCheckBackoff checks that failed attempt i (from 1) was followed by a wait of at least
// the daemon's backoff (2 s doubling) before attempt i+1 arrived at the runtime.
func faultCheckBackoff(t *testing.T, recs []framework.PullRecord) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		want := 2 * time.Second << (i - 1)
		if gap := recs[i].Time.Sub(recs[i-1].Time); gap < want {
			t.Errorf("attempt %d arrived %s after attempt %d, want at least the backoff of %s: %v", i+1, gap, i, want, recs)
		}
	}
}

// The first two GETs of each blob answer 503: the daemon retries with backoff and the job
// succeeds; the runtime saw failed attempts, then exactly one that worked, and has the image.
func TestPullFaultRetries5xxThenSucceeds(t *testing.T) {
	ctx := framework.Context(t, 5*time.Minute)
	e := faultNewEnv(ctx, t, "fault-5xx")
	image := e.faultFreshImage(ctx, t, "flaky/2/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()

	// Each attempt GETs each blob at most once, and fails if one of them answers 503: the config
	// blob alone makes the first two attempts fail, and the four 503s of the two blobs make at
	// most four fail. backoffLimit 5 leaves room for a sixth attempt.
	job := e.faultRunJob(ctx, t, "flaky", image, 5)
	e.faultRequireSucceeded(ctx, t, job)

	recs := faultRecords(ctx, t, image, since, 0)
	failed, ok := recs[:len(recs)-1], recs[len(recs)-1]
	if ok.Code != "OK" {
		t.Fatalf("the last PullImage call did not succeed: %v", recs)
	}
	if len(failed) < 2 || len(failed) > 2*faultBlobs {
		t.Errorf("%d failed PullImage calls before the one that worked, want 2 to %d: %v", len(failed), 2*faultBlobs, recs)
	}
	for _, r := range failed {
		if r.Code == "OK" || !strings.Contains(r.Error, "503 Service Unavailable") {
			t.Errorf("want every attempt before the last to fail with the registry's 503; got %s", r)
		}
	}
	t.Logf("%d PullImage calls failed with 503 before the one that worked", len(failed))
	faultCheckBackoff(t, recs)
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "injected 503"); lines != nil && len(lines) != 2*faultBlobs {
		t.Errorf("the registry injected %d 503s for the image, want 2 per blob (%d):\n%s", len(lines), 2*faultBlobs, strings.Join(lines, "\n"))
	}

	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseSucceeded)
	if st.ImageID != ok.ImageRef {
		t.Errorf("NodeImage reports image ID %s, the successful PullImage call returned %s", st.ImageID, ok.ImageRef)
	}
	e.faultNeverPhase(t, w, appsv1beta1.ImagePhaseFailed)
	if _, seen := w.Find(e.node, func(o framework.TagObservation) bool {
		return o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhasePulling && strings.Contains(o.Status.Message, "retrying in")
	}); !seen {
		t.Logf("no retry message observed in the NodeImage (status writes may have coalesced): %s", w.Summary(e.node))
	}
	e.faultRequirePresent(ctx, t, image, st.ImageID)
}

// Every GET of a blob answers 500: the job fails after exactly backoffLimit+1 attempts, with a
// message that names the registry's answer, and Succeeded is never reported.
func TestPullFaultAlways500FailsClearly(t *testing.T) {
	ctx := framework.Context(t, 5*time.Minute)
	e := faultNewEnv(ctx, t, "fault-500")
	image := e.faultFreshImage(ctx, t, "broken/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()

	const backoffLimit = 2
	job := e.faultRunJob(ctx, t, "broken", image, backoffLimit)
	if s := job.Status; s.Desired != 1 || s.Succeeded != 0 || s.Failed != 1 || !slices.Equal(s.FailedNodes, []string{e.node}) {
		t.Fatalf("want a finished job with failed=1 failedNodes=[%s]; got %s", e.node, framework.DescribeImagePullJob(ctx, e.c, job))
	}

	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseFailed)
	t.Logf("NodeImage status message: %s", st.Message)
	wantAttempts := fmt.Sprintf("after %d attempts", backoffLimit+1)
	for _, want := range []string{wantAttempts, cri.PullReasonFailed, "500 Internal Server Error"} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("the Failed status message does not say %q: %q", want, st.Message)
		}
	}
	e.faultNeverPhase(t, w, appsv1beta1.ImagePhaseSucceeded)

	recs := faultRecords(ctx, t, image, since, backoffLimit+1)
	for _, r := range recs {
		if r.Code == "OK" || !strings.Contains(r.Error, "500 Internal Server Error") {
			t.Errorf("want every attempt to fail with the registry's 500; got %s", r)
		}
	}
	faultCheckBackoff(t, recs)
	if _, present, err := e.rt.ImageStatus(ctx, image); err != nil || present {
		t.Errorf("image %s: present=%t err=%v, want it absent", image, present, err)
	}
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "injected 500"); lines != nil && len(lines) < backoffLimit+1 {
		t.Errorf("the registry injected %d 500s for the image, want at least one per attempt:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// Nothing more after the failure was reported: read the records once more, last.
	if recs := framework.PullRecordsFor(t, image, since); len(recs) != backoffLimit+1 {
		t.Errorf("%d PullImage calls, want exactly backoffLimit+1 = %d: %v", len(recs), backoffLimit+1, recs)
	}
}

// The first GET of each blob is cut off in the middle of the body: the pull is retried (by the
// runtime or by the daemon) and succeeds.
func TestPullFaultDroppedConnectionRetried(t *testing.T) {
	ctx := framework.Context(t, 5*time.Minute)
	e := faultNewEnv(ctx, t, "fault-drop")
	image := e.faultFreshImage(ctx, t, "drop/")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()

	job := e.faultRunJob(ctx, t, "drop", image, 3)
	e.faultRequireSucceeded(ctx, t, job)

	recs := faultRecords(ctx, t, image, since, 0)
	failed, ok := recs[:len(recs)-1], recs[len(recs)-1]
	if ok.Code != "OK" || len(failed) > faultBlobs {
		t.Fatalf("want at most %d failed PullImage calls, then one that worked; got %v", faultBlobs, recs)
	}
	for _, r := range failed {
		if r.Code == "OK" {
			t.Errorf("two PullImage calls succeeded: %v", recs)
		}
	}
	t.Logf("%d PullImage calls failed before the one that worked: %v", len(failed), recs)
	faultCheckBackoff(t, recs)
	if lines := framework.RegistryLogLines(t, e.faultRepoPath(image), "injected drop"); lines != nil && len(lines) != faultBlobs {
		t.Errorf("the registry cut %d GETs of the image, want one per blob (%d):\n%s", len(lines), faultBlobs, strings.Join(lines, "\n"))
	}

	st := e.faultFinalStatus(ctx, t, w, image, appsv1beta1.ImagePhaseSucceeded)
	if st.ImageID != ok.ImageRef {
		t.Errorf("NodeImage reports image ID %s, the successful PullImage call returned %s", st.ImageID, ok.ImageRef)
	}
	e.faultNeverPhase(t, w, appsv1beta1.ImagePhaseFailed)
	e.faultRequirePresent(ctx, t, image, st.ImageID)
}
