package imagepulljob

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// These tests drive the controller the way the informers and the queues
// would: every write reaches the caches and then the NodeImage event
// handler (with the old and the new object), and the queues are worked one
// key at a time in a chosen order.

// observed runs act, refreshes the caches and delivers the NodeImage update
// events of the objects act changed, as the NodeImage informer would.
func (f *fixture) observed(t *testing.T, act func()) {
	t.Helper()
	before := map[string]*v1beta1.NodeImage{}
	for _, o := range f.nis.List() {
		ni := o.(*v1beta1.NodeImage)
		before[ni.Name] = ni.DeepCopy()
	}
	act()
	f.refresh(t)
	for _, o := range f.nis.List() {
		ni := o.(*v1beta1.NodeImage)
		if old, ok := before[ni.Name]; ok && !apiequality.Semantic.DeepEqual(old, ni) {
			f.ctrl.nodeImageUpdated(old, ni.DeepCopy())
		}
	}
}

// daemonReports plays the daemon writing phase (and message) for the
// current version of repo:tag on node.
func (f *fixture) daemonReports(t *testing.T, node, tag string, phase v1beta1.ImagePullPhase, msg string) {
	t.Helper()
	f.reportMessage(t, node, repo, tag, phase, msg) // delivers the update event
}

// createJob creates job on the API server and delivers its add event.
func (f *fixture) createJob(t *testing.T, job *v1beta1.ImagePullJob) {
	t.Helper()
	_, err := f.kruise.AppsV1beta1().ImagePullJobs(job.Namespace).Create(context.Background(), job.DeepCopy(), metav1.CreateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	j, err := f.ctrl.jobLister.ImagePullJobs(job.Namespace).Get(job.Name)
	require.NoError(t, err)
	f.ctrl.jobAdded(j)
}

// newJoinFixture is newFixture whose pending rechecks end with the test.
func newJoinFixture(t *testing.T, o objects) *fixture {
	f := newFixture(t, o)
	t.Cleanup(f.ctrl.rechecks.stopAll)
	return f
}

// recheckPending reports whether a timed look at job name is pending.
func (f *fixture) recheckPending(name string) bool {
	f.ctrl.rechecks.mu.Lock()
	defer f.ctrl.rechecks.mu.Unlock()
	return f.ctrl.rechecks.timers[testNS+"/"+name] != nil
}

// requireNotStuck fails when the unfinished job name counts a node as
// pulling while the tag version it owns there already has a result, and
// nothing will sync the job again: it is not queued and no look at it is
// pending. (The daemon reports nothing more for a finished version.)
func (f *fixture) requireNotStuck(t *testing.T, name string) {
	t.Helper()
	job := f.job(t, name)
	if job.Status.CompletionTime != nil || job.Status.Active == 0 || f.queuedJobs()[testNS+"/"+name] || f.recheckPending(name) {
		return
	}
	nl, err := f.kruise.AppsV1beta1().NodeImages().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range nl.Items {
		ni := &nl.Items[i]
		e := ni.TagSpec(repo, "v1")
		if e == nil || !hasOwner(e, job.UID) {
			continue
		}
		if st := findStatus(ni, repo, "v1", e.Version); st != nil &&
			(st.Phase == v1beta1.ImagePhaseSucceeded || st.Phase == v1beta1.ImagePhaseFailed) {
			require.Failf(t, "job stuck", "%s counts %d pulling (%q) but its version %d on %s is %s and nothing will sync it again",
				name, job.Status.Active, job.Status.Message, e.Version, ni.Name, st.Phase)
		}
	}
}

// queuedJobs lists the job keys waiting in the job queue, leaving them queued.
func (f *fixture) queuedJobs() map[string]bool {
	keys := f.drainJobs()
	for k := range keys {
		f.ctrl.jobQueue.Add(k)
	}
	return keys
}

// workJob takes one job key off the queue and syncs it as the queue's
// worker would (recheck included).
func (f *fixture) workJob(t *testing.T, name string) {
	t.Helper()
	key := testNS + "/" + name
	require.True(t, f.queuedJobs()[key], "job %s is not queued", name)
	f.observed(t, func() {
		_, err := f.ctrl.syncJobTimed(ctx(t), key)
		require.NoError(t, err)
	})
	queued := f.drainJobs()
	delete(queued, key)
	for k := range queued {
		f.ctrl.jobQueue.Add(k)
	}
}

// workNodes syncs the queued NodeImages, delivering the events of their writes.
func (f *fixture) workNodes(t *testing.T) {
	t.Helper()
	f.observed(t, func() { f.syncNodes(t) })
}

// settle works both queues until they are empty, nodes first.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	for range 50 {
		if f.ctrl.nodeQueue.Len() > 0 {
			f.workNodes(t)
			continue
		}
		keys := f.drainJobs()
		if len(keys) == 0 {
			return
		}
		for k := range keys {
			f.ctrl.jobQueue.Add(k)
		}
		for k := range keys {
			f.workJob(t, k[len(testNS)+1:])
		}
	}
	t.Fatal("the queues do not settle")
}

// TestJoinedVersionFailedMeanwhile is a race that left a job "pulling" for
// ever. Job b is created and synced while a's pull of the same image:tag is
// under way on n1, so b plans to join that version. The version fails
// before the node sync writes b's owner reference: that status update
// queues the owners of the time, a only, and the write adding b changes no
// status. Now joining a failed version bumps it: that pull was made without
// b's request (its pull secrets, say), so the tag is pulled again, and the
// new version's status reaches b.
func TestJoinedVersionFailedMeanwhile(t *testing.T) {
	const failure = "failed to pull " + image + " after 4 attempts: Unauthorized: 401 Unauthorized"
	for _, aFirst := range []bool{false, true} {
		name := "node sync, then a counts its failure"
		if aFirst {
			name = "a counts its failure, then node sync"
		}
		t.Run(name, func(t *testing.T) {
			a := newJob("a", image, gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobPullSecrets("sa"))
			f := newJoinFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
			f.ctrl.jobAdded(a)
			f.settle(t)
			require.Equal(t, int64(1), f.tagOn(t, "n1", repo, "v1").Version)
			f.daemonReports(t, "n1", "v1", v1beta1.ImagePhasePulling, "")
			f.settle(t)

			// b, with a secret of its own, is created and synced while the pull is under way.
			b := newJob("b", image, gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobPullSecrets("sb"))
			f.createJob(t, b)
			f.workJob(t, "b")
			require.Equal(t, int32(1), f.job(t, "b").Status.Active)
			require.Equal(t, 1, f.ctrl.nodeQueue.Len(), "n1 queued for b's request")

			// The pull fails before the node sync adds b.
			f.daemonReports(t, "n1", "v1", v1beta1.ImagePhaseFailed, failure)
			assert.Equal(t, map[string]bool{testNS + "/a": true}, f.queuedJobs(), "b does not own the tag yet")
			if aFirst {
				f.workJob(t, "a")
				require.NotNil(t, f.job(t, "a").Status.CompletionTime)
			}
			f.workNodes(t) // b joins version 1, which has failed
			tag := f.tagOn(t, "n1", repo, "v1")
			assert.True(t, hasOwner(tag, b.UID))
			assert.Equal(t, int64(2), tag.Version, "pulled again, with b's request")
			assert.Contains(t, f.ni(t, "n1").Spec.Images[repo].PullSecrets, copyRef(testNS, "sb"))

			f.settle(t)
			f.requireNotStuck(t, "b")
			assert.Equal(t, "0/1 nodes succeeded, 0 failed, 1 pulling", f.job(t, "b").Status.Message)

			f.daemonReports(t, "n1", "v1", v1beta1.ImagePhaseSucceeded, "")
			f.settle(t)
			st := f.job(t, "b").Status
			require.NotNil(t, st.CompletionTime, "b ends")
			assert.Equal(t, "Completed: 1/1 nodes succeeded, 0 failed, 0 pulling", st.Message)
			st = f.job(t, "a").Status
			require.NotNil(t, st.CompletionTime, "a ends")
			if aFirst {
				assert.Equal(t, "Completed: 0/1 nodes succeeded, 1 failed, 0 pulling (n1: "+failure+")", st.Message, "a had counted version 1")
				assert.Equal(t, []v1beta1.NodeFailure{{Node: "n1", Reason: "Unauthorized", Message: failure}}, st.Failures)
			} else {
				assert.Equal(t, "Completed: 1/1 nodes succeeded, 0 failed, 0 pulling", st.Message, "a owned version 2 too")
			}
			assert.Empty(t, f.ni(t, "n1").Spec.Images)
		})
	}
}

// TestJoinedVersionSucceededMeanwhile: the same race with a pull that
// succeeds; b counts the success.
func TestJoinedVersionSucceededMeanwhile(t *testing.T) {
	a := newJob("a", image, gen.SetImagePullJobNodeNames("n1"))
	f := newJoinFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.ctrl.jobAdded(a)
	f.settle(t)
	f.daemonReports(t, "n1", "v1", v1beta1.ImagePhasePulling, "")
	f.settle(t)
	b := newJob("b", image, gen.SetImagePullJobNodeNames("n1"))
	f.createJob(t, b)
	f.workJob(t, "b")
	f.daemonReports(t, "n1", "v1", v1beta1.ImagePhaseSucceeded, "")
	f.workNodes(t)
	f.settle(t)
	f.requireNotStuck(t, "b")
	for _, j := range []string{"a", "b"} {
		st := f.job(t, j).Status
		require.NotNil(t, st.CompletionTime, j)
		assert.Equal(t, "Completed: 1/1 nodes succeeded, 0 failed, 0 pulling", st.Message, j)
	}
	assert.Equal(t, int64(1), f.ni(t, "n1").Status.ImageStatuses[repo].Tags[0].Version, "one pull for both")
}
