//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// faultFreshImage pushes a new image under prefix, which the registry must serve (the test is
// skipped on a registry older than the prefix), and makes sure the node does not have it.
func (e *faultEnv) faultFreshImage(ctx context.Context, t *testing.T, prefix string) string {
	t.Helper()
	if !e.f.RegistryHasPrefix(t, prefix) {
		t.Skipf("the running registry at %s does not serve %s; test/registry has it now: restart the local cluster "+
			"(make down && make deploy) to rebuild the registry", e.f.Registry, prefix)
	}
	image := e.f.UniqueImage(prefix)
	framework.PushImage(t, image, nil)
	if err := e.rt.RemoveImage(ctx, image); err != nil {
		t.Fatalf("removing %s from the node: %v", image, err)
	}
	return image
}

// faultRepoPath is the repository of image without the registry host and the tag, as the
// registry's log shows it.
func (e *faultEnv) faultRepoPath(image string) string {
	repo, _ := framework.SplitImage(image)
	return strings.TrimPrefix(repo, e.f.Registry+"/")
}

// faultRequireSucceeded checks a finished job succeeded on exactly the real node.
func (e *faultEnv) faultRequireSucceeded(ctx context.Context, t *testing.T, job *appsv1beta1.ImagePullJob) {
	t.Helper()
	s := job.Status
	if s.Desired != 1 || s.Succeeded != 1 || s.Failed != 0 || s.Active != 0 || len(s.FailedNodes) != 0 {
		t.Fatalf("want a job that succeeded on the one node; got %s", framework.DescribeImagePullJob(ctx, e.c, job))
	}
}

// faultRequirePresent checks that the node's runtime has image, with the ID the daemon reported.
func (e *faultEnv) faultRequirePresent(ctx context.Context, t *testing.T, image, wantID string) {
	t.Helper()
	info, present, err := e.rt.ImageStatus(ctx, image)
	if err != nil || !present {
		t.Fatalf("image %s is not on the node although its pull was reported Succeeded (present=%t, err=%v)", image, present, err)
	}
	if info.ID != wantID {
		t.Errorf("image %s is on the node as %s, but the pull was reported with image ID %s", image, info.ID, wantID)
	}
}

// faultFinalStatus waits until the watch has seen image reach phase on the node with the spec's
// version, checks that the last status the node showed for the tag is that one (a finished job's
// tag may have left the NodeImage since), and returns it.
func (e *faultEnv) faultFinalStatus(ctx context.Context, t *testing.T, w *framework.NodeImageWatch, image string, phase appsv1beta1.ImagePullPhase) appsv1beta1.ImageTagStatus {
	t.Helper()
	w.WaitObservation(ctx, t, e.node, time.Minute, string(phase)+" of the spec's version", func(o framework.TagObservation) bool {
		return o.Spec != nil && o.Status != nil && o.Status.Phase == phase && o.Status.Version == o.Spec.Version
	})
	var last *appsv1beta1.ImageTagStatus
	for _, o := range w.History(e.node) {
		if o.Status != nil {
			last = o.Status
		}
	}
	if last == nil || last.Phase != phase {
		t.Fatalf("the last status NodeImage %s showed of %s is not %s: %s", e.node, image, phase, w.Summary(e.node))
	}
	return *last
}

// faultRecords returns the proxy's records of image since, in arrival order, once one has code OK
// (want OK) or there are n (want n > 0).
func faultRecords(ctx context.Context, t *testing.T, image string, since time.Time, n int) []framework.PullRecord {
	t.Helper()
	var recs []framework.PullRecord
	desc := "a PullImage call with code OK"
	if n > 0 {
		desc = fmt.Sprintf("%d PullImage calls", n)
	}
	framework.WaitFor(ctx, t, time.Minute, "CRI proxy records of "+image+": "+desc, func(context.Context) (bool, string, error) {
		recs = framework.PullRecordsFor(t, image, since)
		slices.SortFunc(recs, func(a, b framework.PullRecord) int { return a.Time.Compare(b.Time) })
		if n > 0 {
			return len(recs) >= n, fmt.Sprintf("%v", recs), nil
		}
		return slices.ContainsFunc(recs, func(r framework.PullRecord) bool { return r.Code == "OK" }), fmt.Sprintf("%v", recs), nil
	})
	return recs
}

// faultNeverPhase checks that the watch never saw image in phase on the node.
func (e *faultEnv) faultNeverPhase(t *testing.T, w *framework.NodeImageWatch, phase appsv1beta1.ImagePullPhase) {
	t.Helper()
	if _, ok := w.Find(e.node, func(o framework.TagObservation) bool {
		return o.Status != nil && o.Status.Phase == phase
	}); ok {
		t.Errorf("NodeImage %s reported %s at some point: %s", e.node, phase, w.Summary(e.node))
	}
}

// faultSucceededCheck remembers when the watch first saw the tag Succeeded on the node and
// whether the runtime had the image at that moment.
type faultSucceededCheck struct {
	mu      sync.Mutex
	at      time.Time
	present bool
	err     error
}

// faultCheckFirstSucceeded makes w note when it first sees image Succeeded on the node, and asks
// the runtime at once whether it has the image.
func (e *faultEnv) faultCheckFirstSucceeded(w *framework.NodeImageWatch, image string) *faultSucceededCheck {
	repo, tag := framework.SplitImage(image)
	var succeeded faultSucceededCheck
	w.CheckEachEvent(func(latest map[string]*appsv1beta1.NodeImage) string {
		ni := latest[e.node]
		if ni == nil {
			return ""
		}
		st := framework.TagStatusesOf(ni, repo, tag)
		if len(st) == 0 || st[len(st)-1].Phase != appsv1beta1.ImagePhaseSucceeded {
			return ""
		}
		succeeded.mu.Lock()
		defer succeeded.mu.Unlock()
		if !succeeded.at.IsZero() {
			return ""
		}
		succeeded.at = time.Now()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, succeeded.present, succeeded.err = e.rt.ImageStatus(cctx, image)
		return ""
	})
	return &succeeded
}

// require checks that Succeeded was seen, after the successful PullImage call ok arrived at the
// runtime, and that the runtime had the image at that moment.
func (s *faultSucceededCheck) require(t *testing.T, w *framework.NodeImageWatch, node string, ok framework.PullRecord) {
	t.Helper()
	s.mu.Lock()
	at, present, perr := s.at, s.present, s.err
	s.mu.Unlock()
	switch {
	case at.IsZero():
		t.Errorf("the watch never saw Succeeded: %s", w.Summary(node))
	case !at.After(ok.Time):
		t.Errorf("Succeeded first seen at %s, before the successful PullImage call arrived at %s", at.Format(time.RFC3339Nano), ok.Time.Format(time.RFC3339Nano))
	case perr != nil || !present:
		t.Errorf("when Succeeded was first seen (%s) the runtime did not have the image (present=%t, err=%v)", at.Format(time.RFC3339Nano), present, perr)
	}
}

// faultOneOKPullAfter requires exactly one successful PullImage call of image since since, made
// after the fault at faultAt (no pull repeated, none from before the fault), and returns it.
func faultOneOKPullAfter(ctx context.Context, t *testing.T, image string, since, faultAt time.Time, fault string) framework.PullRecord {
	t.Helper()
	recs := faultRecords(ctx, t, image, since, 0)
	var oks []framework.PullRecord
	for _, r := range recs {
		if r.Code == "OK" {
			oks = append(oks, r)
		}
	}
	if len(oks) != 1 || !oks[0].Time.After(faultAt) {
		t.Fatalf("want exactly one successful PullImage call, made after %s at %s; got %v", fault, faultAt.Format(time.RFC3339Nano), recs)
	}
	return oks[0]
}

// faultStartHeldPull creates an ImagePullJob of image (a stall/ repository) with backoffLimit 1
// and no timeout or deadline short enough to cut in during a fault, and returns once the
// daemon's PullImage has reached the registry, which holds its blob GET (Pulling is written
// just before the call).
func (e *faultEnv) faultStartHeldPull(ctx context.Context, t *testing.T, w *framework.NodeImageWatch, name, image string) {
	t.Helper()
	job := framework.NewImagePullJob(e.ns, name, image)
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](1)}
	job.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](900)
	framework.CreateImagePullJob(ctx, t, e.c, job)
	w.WaitObservation(ctx, t, e.node, time.Minute, "tag Pulling", func(o framework.TagObservation) bool {
		return o.Spec != nil && o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhasePulling && o.Status.Version == o.Spec.Version
	})
	framework.WaitFor(ctx, t, time.Minute, "the registry holding a blob GET of "+image, func(context.Context) (bool, string, error) {
		held := framework.RegistryLogLines(t, e.faultRepoPath(image), "registry request held")
		return len(held) > 0, fmt.Sprintf("%d held GETs in %s", len(held), framework.RegistryLog), nil
	})
}

// faultRunJob creates the ImagePullJob e.faultJob(name, image, backoffLimit) and waits until it
// has finished.
func (e *faultEnv) faultRunJob(ctx context.Context, t *testing.T, name, image string, backoffLimit int32) *appsv1beta1.ImagePullJob {
	t.Helper()
	start := time.Now()
	framework.CreateImagePullJob(ctx, t, e.c, e.faultJob(name, image, backoffLimit))
	job := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, name, faultJobTimeout)
	t.Logf("job finished after %s: %s", time.Since(start).Round(time.Millisecond), job.Status.Message)
	return job
}
