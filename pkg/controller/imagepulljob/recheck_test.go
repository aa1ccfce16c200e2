package imagepulljob

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// addLog records the keys a rechecks adds.
type addLog struct {
	mu   sync.Mutex
	keys []string
}

func (l *addLog) add(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, key)
}

func (l *addLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}

func TestRechecksLatestWins(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	var log addLog
	r := newRechecks(clk, log.add)
	defer r.stopAll()

	r.set("ns/a", 10*time.Second)
	r.set("ns/a", 5*time.Second)
	assert.Equal(t, 1, r.pending(), "one pending look per key")
	clk.Step(5 * time.Second)
	require.Eventually(t, func() bool { return len(log.get()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"ns/a"}, log.get())
	assert.Zero(t, r.pending())
	assert.False(t, clk.HasWaiters(), "the replaced look was stopped")

	r.set("ns/b", time.Minute)
	r.set("ns/b", 0)
	assert.Zero(t, r.pending(), "zero cancels")
	assert.False(t, clk.HasWaiters())
	clk.Step(time.Hour)
	assert.Equal(t, []string{"ns/a"}, log.get())
}

// A job that completes before its active deadline is not synced again when
// the deadline passes: on an idle cluster nothing is queued.
func TestDeadlineLookCancelledWhenJobCompletes(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobActiveDeadlineSeconds(700))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	_, err := f.ctrl.syncJobTimed(ctx(t), testNS+"/j")
	require.NoError(t, err)
	f.refresh(t)
	assert.Equal(t, 1, f.ctrl.rechecks.pending(), "a look at the deadline is pending")
	f.syncNodes(t)
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)

	_, err = f.ctrl.syncJobTimed(ctx(t), testNS+"/j")
	require.NoError(t, err)
	f.refresh(t)
	require.NotNil(t, f.job(t, "j").Status.CompletionTime, "completed")
	// The completion's status update reaches the job again through the
	// informer; that sync finds it finished and asks for no look either.
	_, err = f.ctrl.syncJobTimed(ctx(t), testNS+"/j")
	require.NoError(t, err)
	assert.Zero(t, f.ctrl.rechecks.pending(), "the deadline look is gone (stopped: TestRechecksLatestWins)")
	f.drainJobs()
	f.clock.Step(700 * time.Second)
	assert.Zero(t, f.ctrl.jobQueue.Len(), "nothing queued when the deadline passes")
}

func TestDeadlineLookQueuesTheJob(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobActiveDeadlineSeconds(700))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	_, err := f.ctrl.syncJobTimed(ctx(t), testNS+"/j")
	require.NoError(t, err)
	f.drainJobs()
	f.clock.Step(700 * time.Second)
	require.Eventually(t, func() bool { return f.ctrl.jobQueue.Len() == 1 }, 5*time.Second, time.Millisecond,
		"the job is queued when its deadline passes")
}
