package imagepulljob

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// nodeSkews are the node clock offsets every timing test runs with: the
// outcome must be the one of an exact clock (0).
var nodeSkews = []time.Duration{0, 40 * time.Second, -40 * time.Second, time.Hour, -time.Hour}

func forEachSkew(t *testing.T, run func(t *testing.T, skew time.Duration)) {
	for _, skew := range nodeSkews {
		t.Run(fmt.Sprintf("node clock %+v", skew), func(t *testing.T) { run(t, skew) })
	}
}

func skewedFixture(t *testing.T, skew time.Duration, o objects) *fixture {
	f := newFixture(t, o)
	f.nodeSkew = skew
	return f
}

// Another job's result reached before an Always-pull job started is not
// that job's pull: it pulls again.
func TestClockSkewStaleResultIsNotFresh(t *testing.T) {
	forEachSkew(t, func(t *testing.T, skew time.Duration) {
		a := newJob("a", image, gen.SetImagePullJobNodeNames("n1"))
		b := newJob("b", image, gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobImagePullPolicy(v1beta1.PullAlways))
		f := skewedFixture(t, skew, objects{jobs: []*v1beta1.ImagePullJob{a, b}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
		f.step(t, "a")
		f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
		f.clock.Step(20 * time.Second)
		f.step(t, "b") // b starts 20 s after a's pull ended
		tag := f.tagOn(t, "n1", repo, "v1")
		assert.True(t, hasOwner(tag, b.UID))
		assert.Equal(t, int64(2), tag.Version, "pulled again for b")
		st := f.job(t, "b").Status
		assert.Nil(t, st.CompletionTime)
		assert.Equal(t, int32(1), st.Active)
	})
}

// Another job's result reached after an Always-pull job started counts for
// it: no second pull.
func TestClockSkewFreshResultCounts(t *testing.T) {
	forEachSkew(t, func(t *testing.T, skew time.Duration) {
		a := newJob("a", image, gen.SetImagePullJobNodeNames("n1"))
		b := newJob("b", image, gen.SetImagePullJobNodeNames("n0", "n1"), gen.SetImagePullJobImagePullPolicy(v1beta1.PullAlways))
		f := skewedFixture(t, skew, objects{jobs: []*v1beta1.ImagePullJob{a, b},
			nodeImages: []*v1beta1.NodeImage{nodeImage("n0"), nodeImage("n1")}})
		f.step(t, "a") // a pulls on n1
		f.clock.Step(10 * time.Second)
		f.step(t, "b") // b starts: n0 first (parallelism 1), n1 waits
		require.False(t, hasOwner(f.tagOn(t, "n1", repo, "v1"), b.UID), "b has not joined n1")
		f.clock.Step(10 * time.Second)
		f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded) // a's pull ends after b started
		f.report(t, "n0", repo, "v1", v1beta1.ImagePhaseSucceeded)
		f.step(t, "b")
		st := f.job(t, "b").Status
		require.NotNil(t, st.CompletionTime, "b counts a's pull on n1")
		assert.Equal(t, "Completed: 2/2 nodes succeeded, 0 failed, 0 pulling", st.Message)
		assert.Equal(t, int64(1), f.ni(t, "n1").Status.ImageStatuses[repo].Tags[0].Version, "no second pull")
	})
}

// A Never job re-pulls a successful node exactly RepullPeriod after the
// controller saw the result, and retries a failed one exactly
// RetryFailedPeriod after.
func TestClockSkewRenewalTiming(t *testing.T) {
	for _, tc := range []struct {
		phase  v1beta1.ImagePullPhase
		period time.Duration
	}{{v1beta1.ImagePhaseSucceeded, DefaultRepullPeriod}, {v1beta1.ImagePhaseFailed, DefaultRetryFailedPeriod}} {
		t.Run(string(tc.phase), func(t *testing.T) {
			forEachSkew(t, func(t *testing.T, skew time.Duration) {
				job := newJob("j", image, gen.SetImagePullJobCompletionType(v1beta1.Never), gen.SetImagePullJobNodeNames("n1"))
				f := skewedFixture(t, skew, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
				f.step(t, "j")
				f.clock.Step(5 * time.Second)
				f.report(t, "n1", repo, "v1", tc.phase)
				assert.Equal(t, tc.period, f.syncJob(t, "j"), "looks again when the result is due")
				f.syncNodes(t)

				f.clock.Step(tc.period - time.Second)
				assert.Equal(t, time.Second, f.syncJob(t, "j"))
				f.syncNodes(t)
				assert.Equal(t, int64(1), f.tagOn(t, "n1", repo, "v1").Version, "not due yet")

				f.clock.Step(time.Second)
				f.step(t, "j")
				assert.Equal(t, int64(2), f.tagOn(t, "n1", repo, "v1").Version, "due now")
				assert.Equal(t, int32(1), f.job(t, "j").Status.Active)
			})
		})
	}
}

// The job's deadline is the controller's alone: a node's dates do not
// move it.
func TestClockSkewDeadline(t *testing.T) {
	forEachSkew(t, func(t *testing.T, skew time.Duration) {
		job := newJob("j", image, gen.SetImagePullJobNodeNames("n1", "n2"), gen.SetImagePullJobParallelism(intstr.FromInt32(2)),
			gen.SetImagePullJobActiveDeadlineSeconds(700))
		f := skewedFixture(t, skew, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1"), nodeImage("n2")}})
		f.step(t, "j")
		f.report(t, "n1", repo, "v1", v1beta1.ImagePhasePulling)
		f.clock.Step(100 * time.Second)
		f.report(t, "n2", repo, "v1", v1beta1.ImagePhaseSucceeded)
		f.clock.Step(599 * time.Second)
		assert.Equal(t, time.Second, f.syncJob(t, "j"))
		assert.Nil(t, f.job(t, "j").Status.CompletionTime)
		f.clock.Step(time.Second)
		f.syncJob(t, "j")
		st := f.job(t, "j").Status
		require.NotNil(t, st.CompletionTime)
		assert.Equal(t, []string{"n1"}, st.FailedNodes)
		assert.Equal(t, int32(1), st.Succeeded)
	})
}

// After a restart the controller has not seen the results appear: another
// job's result is not trusted as fresh (an Always job pulls again), and a
// renewal counts from the node's date but never from the future.
func TestUndatedResultsAreTreatedSafely(t *testing.T) {
	r := newResultTimes()
	ni := nodeImage("n1", gen.SetNodeImageStatus(v1beta1.NodeImageStatus{ImageStatuses: map[string]v1beta1.ImageStatus{
		repo: {Tags: []v1beta1.ImageTagStatus{{Tag: "v1", Phase: v1beta1.ImagePhaseSucceeded, Version: 1}}},
	}}))
	st := &ni.Status.ImageStatuses[repo].Tags[0]
	r.observe(nil, ni, now) // the informer's initial list
	assert.False(t, r.freshSince("n1", repo, st, now.Add(-time.Hour)))
	assert.Equal(t, now, r.since("n1", repo, st, now), "no date at all: now")

	st.CompletionTime = ptrTime(now.Add(time.Hour)) // a node an hour ahead
	assert.Equal(t, now, r.since("n1", repo, st, now), "never later than now")
	st.CompletionTime = ptrTime(now.Add(-time.Hour))
	assert.Equal(t, now.Add(-time.Hour), r.since("n1", repo, st, now))

	// A result that then appears in an update is dated by the controller.
	cur := gen.NodeImageFrom(ni, gen.SetNodeImageStatus(v1beta1.NodeImageStatus{ImageStatuses: map[string]v1beta1.ImageStatus{
		repo: {Tags: []v1beta1.ImageTagStatus{{Tag: "v1", Phase: v1beta1.ImagePhaseSucceeded, Version: 2}}},
	}}))
	r.observe(ni, cur, now.Add(time.Minute))
	at, ok := r.seen("n1", repo, &cur.Status.ImageStatuses[repo].Tags[0])
	assert.True(t, ok)
	assert.Equal(t, now.Add(time.Minute), at)
	_, ok = r.seen("n1", repo, st)
	assert.False(t, ok, "results no longer reported are forgotten")
	r.forget("n1")
	assert.Empty(t, r.nodes)
}

func ptrTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }
