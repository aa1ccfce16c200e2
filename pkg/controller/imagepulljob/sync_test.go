package imagepulljob

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	repo  = "registry.example.com/app"
	image = repo + ":v1"
)

func names(nis []*v1beta1.NodeImage) []string {
	var out []string
	for _, n := range nis {
		out = append(out, n.Name)
	}
	return out
}

func TestTargets(t *testing.T) {
	nis := []*v1beta1.NodeImage{
		nodeImage("n1", gen.SetNodeImageLabels(map[string]string{"pool": "a"})),
		nodeImage("n2", gen.SetNodeImageLabels(map[string]string{"pool": "b"})),
		nodeImage("n3", gen.SetNodeImageLabels(map[string]string{"pool": "a"})),
	}
	appX := gen.AddPodLabels(map[string]string{"app": "x"})
	pods := []*corev1.Pod{
		pod("p1", "n2", appX),
		pod("p2", "", appX),     // not scheduled
		pod("p3", "gone", appX), // node without NodeImage
		pod("p4", "n1", gen.AddPodLabels(map[string]string{"app": "other"})), // no match
		pod("p5", "n3", appX, gen.SetPodPhase(corev1.PodSucceeded)),          // finished
	}
	tests := []struct {
		name string
		job  *v1beta1.ImagePullJob
		want []string
	}{
		{"names", newJob("j", image, gen.SetImagePullJobNodeNames("n3", "missing", "n1")), []string{"n1", "n3"}},
		{"labels", newJob("j", image, gen.SetImagePullJobNodeSelector(map[string]string{"pool": "a"})), []string{"n1", "n3"}},
		{"pods", newJob("j", image, gen.SetImagePullJobPodSelector(map[string]string{"app": "x"})), []string{"n2"}},
		{"all", newJob("j", image), []string{"n1", "n2", "n3"}},
		{"empty selector is all", newJob("j", image, func(j *v1beta1.ImagePullJob) {
			j.Spec.Selector = &v1beta1.ImagePullJobNodeSelector{}
		}), []string{"n1", "n2", "n3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objects{nodeImages: nis, pods: pods})
			got, err := f.ctrl.targets(tc.job)
			require.NoError(t, err)
			assert.Equal(t, tc.want, names(got))
		})
	}
}

func TestFanOutEntries(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobParallelism(intstr.FromInt32(10)), gen.SetImagePullJobPullSecrets("s1"),
		gen.SetImagePullJobSandboxLabels(map[string]string{"k": "v"}), gen.SetImagePullJobActiveDeadlineSeconds(900),
		gen.SetImagePullJobTTLSecondsAfterFinished(60),
		gen.SetImagePullJobPullPolicy(v1beta1.PullPolicy{TimeoutSeconds: ptr.To(int32(300)), BackoffLimit: ptr.To(int32(1))}),
		gen.SetImagePullJobImagePullPolicy(v1beta1.PullAlways))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1"), nodeImage("n2")}})

	f.step(t, "j")

	for _, n := range []string{"n1", "n2"} {
		ni := f.ni(t, n)
		img := ni.Spec.Images[repo]
		require.Len(t, img.Tags, 1, n)
		tag := img.Tags[0]
		assert.Equal(t, "v1", tag.Tag)
		assert.Equal(t, []corev1.ObjectReference{jobRef(job)}, tag.OwnerReferences)
		assert.Equal(t, int64(1), tag.Version)
		assert.Equal(t, v1beta1.PullAlways, tag.ImagePullPolicy)
		assert.Equal(t, now, tag.CreatedAt.Time.UTC())
		assert.Equal(t, &v1beta1.ImageTagPullPolicy{
			TimeoutSeconds: ptr.To(int32(300)), BackoffLimit: ptr.To(int32(1)),
			ActiveDeadlineSeconds: ptr.To(int64(900)), TTLSecondsAfterFinished: ptr.To(int32(960)),
		}, tag.PullPolicy)
		assert.Equal(t, []v1beta1.ReferenceObject{{Namespace: v1beta1.DaemonConfigNamespace, Name: "default.s1"}}, img.PullSecrets)
		assert.Equal(t, &v1beta1.SandboxConfig{Labels: map[string]string{"k": "v"}}, img.SandboxConfig)
	}
	st := f.job(t, "j").Status
	assert.Equal(t, int32(2), st.Desired)
	assert.Equal(t, int32(2), st.Active)
	assert.Equal(t, now, st.StartTime.Time.UTC())
	assert.Equal(t, "0/2 nodes succeeded, 0 failed, 2 pulling", st.Message)
	assert.Contains(t, f.events(), "Normal Started Started pulling "+image+" on 2 nodes")
}

func TestNewTagVersionIsAboveStaleStatus(t *testing.T) {
	ni := nodeImage("n1", gen.SetNodeImageStatus(v1beta1.NodeImageStatus{ImageStatuses: map[string]v1beta1.ImageStatus{
		repo: {Tags: []v1beta1.ImageTagStatus{{Tag: "v1", Phase: v1beta1.ImagePhaseFailed, Version: 4}}},
	}}))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{newJob("j", image)}, nodeImages: []*v1beta1.NodeImage{ni}})
	f.step(t, "j")
	assert.Equal(t, int64(5), f.tagOn(t, "n1", repo, "v1").Version)
	assert.Equal(t, int32(1), f.job(t, "j").Status.Active, "the old result must not count")
}

func TestSharedTagAndRemoval(t *testing.T) {
	a := newJob("a", image, gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobPullSecrets("sa"),
		gen.SetImagePullJobSandboxLabels(map[string]string{"k": "a", "ka": "1"}), gen.SetImagePullJobCreationTimestamp(now.Add(-2*time.Hour)))
	b := newJob("b", image, gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobPullSecrets("sb"),
		gen.SetImagePullJobSandboxLabels(map[string]string{"k": "b", "kb": "1"}))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a, b}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})

	f.step(t, "a", "b")
	img := f.ni(t, "n1").Spec.Images[repo]
	require.Len(t, img.Tags, 1, "one shared tag")
	assert.Equal(t, []corev1.ObjectReference{jobRef(a), jobRef(b)}, img.Tags[0].OwnerReferences)
	assert.Equal(t, []string{"default.sa", "default.sb"}, []string{img.PullSecrets[0].Name, img.PullSecrets[1].Name})
	assert.Equal(t, map[string]string{"k": "a", "ka": "1", "kb": "1"}, img.SandboxConfig.Labels, "union; the older job wins a conflict")
	assert.Equal(t, int32(1), f.job(t, "a").Status.Active)
	assert.Equal(t, int32(1), f.job(t, "b").Status.Active)

	// a is deleted: its ref and its contributions go, b's stay.
	require.NoError(t, f.kruise.AppsV1beta1().ImagePullJobs(testNS).Delete(context.Background(), "a", metav1.DeleteOptions{}))
	f.refresh(t)
	f.step(t, "a")
	img = f.ni(t, "n1").Spec.Images[repo]
	require.Len(t, img.Tags, 1)
	assert.Equal(t, []corev1.ObjectReference{jobRef(b)}, img.Tags[0].OwnerReferences)
	assert.Equal(t, []v1beta1.ReferenceObject{copyRef(testNS, "sb")}, img.PullSecrets)
	assert.Equal(t, map[string]string{"k": "b", "kb": "1"}, img.SandboxConfig.Labels)

	// b finishes: the tag and the image go.
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.step(t, "b")
	assert.NotNil(t, f.job(t, "b").Status.CompletionTime)
	f.step(t, "b")
	assert.Empty(t, f.ni(t, "n1").Spec.Images)
}

func TestParallelism(t *testing.T) {
	var nis []*v1beta1.NodeImage
	for i := range 5 {
		nis = append(nis, nodeImage(fmt.Sprintf("n%d", i)))
	}
	for _, p := range []intstr.IntOrString{intstr.FromInt32(2), intstr.FromString("2"), intstr.FromString("40%")} {
		t.Run(p.String(), func(t *testing.T) {
			job := newJob("j", image, gen.SetImagePullJobParallelism(p))
			f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: nis})
			f.step(t, "j")
			active := f.activeNodes(t, job, repo, "v1")
			assert.Equal(t, []string{"n0", "n1"}, active)
			assert.Equal(t, "0/5 nodes succeeded, 0 failed, 2 pulling, 3 waiting", f.job(t, "j").Status.Message)
			done := map[string]bool{}
			for range 10 {
				// Finish one active node; the job may add one more.
				active = f.activeNodes(t, job, repo, "v1")
				require.LessOrEqual(t, len(active), 2, "never more than 2 active")
				if len(active) == 0 {
					break
				}
				f.report(t, active[0], repo, "v1", v1beta1.ImagePhaseSucceeded)
				done[active[0]] = true
				f.step(t, "j")
				f.step(t, "j") // a second sync sees its own writes: still bounded
				require.LessOrEqual(t, len(f.activeNodes(t, job, repo, "v1")), 2)
			}
			assert.Len(t, done, 5)
			assert.NotNil(t, f.job(t, "j").Status.CompletionTime)
		})
	}
}

func TestParallelismZeroPauses(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobParallelism(intstr.FromInt32(0)))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "j")
	assert.Empty(t, f.ni(t, "n1").Spec.Images)
	st := f.job(t, "j").Status
	assert.Nil(t, st.CompletionTime)
	assert.Equal(t, "0/1 nodes succeeded, 0 failed, 0 pulling, 1 waiting (paused: parallelism is 0)", st.Message)
}

func TestRollupAndCompletion(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobParallelism(intstr.FromInt32(3)))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1"), nodeImage("n2"), nodeImage("n3")}})
	f.step(t, "j")
	const notFound = "failed to pull " + image + " after 1 attempt: NotFound: manifest unknown"
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.reportMessage(t, "n3", repo, "v1", v1beta1.ImagePhaseFailed, notFound)
	f.report(t, "n2", repo, "v1", v1beta1.ImagePhasePulling)
	f.step(t, "j")
	st := f.job(t, "j").Status
	assert.Equal(t, v1beta1.ImagePullJobStatus{
		StartTime: st.StartTime, Desired: 3, Active: 1, Succeeded: 1, Failed: 1,
		FailedNodes: []string{"n3"}, Message: "1/3 nodes succeeded, 1 failed, 1 pulling (n3: " + notFound + ")",
		Failures: []v1beta1.NodeFailure{{Node: "n3", Reason: "NotFound", Message: notFound}},
	}, st)
	f.events()

	f.clock.Step(time.Minute)
	f.report(t, "n2", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.syncJob(t, "j")
	st = f.job(t, "j").Status
	require.NotNil(t, st.CompletionTime)
	assert.Equal(t, now.Add(time.Minute), st.CompletionTime.Time.UTC())
	assert.Equal(t, "Completed: 2/3 nodes succeeded, 1 failed, 0 pulling (n3: "+notFound+")", st.Message)
	assert.Equal(t, []string{"Warning Failed Completed: 2/3 nodes succeeded, 1 failed, 0 pulling (n3: " + notFound + ")"}, f.events())
	f.syncNodes(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		assert.Empty(t, f.ni(t, n).Spec.Images, "request withdrawn from %s", n)
	}
	// The reason outlives the NodeImage tag it was read from.
	assert.Equal(t, []v1beta1.NodeFailure{{Node: "n3", Reason: "NotFound", Message: notFound}}, f.job(t, "j").Status.Failures)
	// The finished job's status no longer changes.
	f.kruise.ClearActions()
	f.step(t, "j")
	assert.Empty(t, f.writes())
}

func TestCompletionAllSucceeded(t *testing.T) {
	job := newJob("j", image)
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "j")
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.events()
	f.step(t, "j")
	assert.Equal(t, "Completed: 1/1 nodes succeeded, 0 failed, 0 pulling", f.job(t, "j").Status.Message)
	assert.Equal(t, []string{"Normal Completed Completed: 1/1 nodes succeeded, 0 failed, 0 pulling"}, f.events())
	assert.Empty(t, f.ni(t, "n1").Spec.Images)
}

func TestDeadline(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobActiveDeadlineSeconds(700))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1"), nodeImage("n2")}})
	after := f.syncJob(t, "j")
	assert.Equal(t, 700*time.Second, after, "requeued for the deadline")
	f.syncNodes(t)
	const retrying = "attempt 2 failed: Timeout: i/o timeout; retrying in 4s"
	f.reportMessage(t, "n1", repo, "v1", v1beta1.ImagePhasePulling, retrying)
	f.clock.Step(700 * time.Second)
	f.events()
	f.step(t, "j")
	st := f.job(t, "j").Status
	require.NotNil(t, st.CompletionTime)
	assert.Equal(t, int32(2), st.Failed)
	assert.Equal(t, int32(0), st.Active)
	assert.Equal(t, []string{"n1", "n2"}, st.FailedNodes)
	assert.Equal(t, "Deadline of 700s exceeded: 0/2 nodes succeeded, 2 failed, 0 pulling (n1: DeadlineExceeded: "+
		"the job's activeDeadlineSeconds (700) passed while the node was pulling; last: "+retrying+"; 1 more node failed)", st.Message)
	assert.Equal(t, []v1beta1.NodeFailure{
		{Node: "n1", Reason: "DeadlineExceeded", Message: "the job's activeDeadlineSeconds (700) passed while the node was pulling; last: " + retrying},
		{Node: "n2", Reason: "DeadlineExceeded", Message: "the job's activeDeadlineSeconds (700) passed before the node's turn (parallelism)"},
	}, st.Failures)
	ev := f.events()
	require.Len(t, ev, 2)
	assert.True(t, strings.HasPrefix(ev[0], "Warning DeadlineExceeded Deadline of 700s exceeded"), ev[0])
	assert.True(t, strings.HasPrefix(ev[1], "Warning Failed"), ev[1])
	assert.Empty(t, f.ni(t, "n1").Spec.Images)
}

func TestTTLDeletion(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobTTLSecondsAfterFinished(60), gen.SetImagePullJobStartTime(now.Add(-time.Minute)),
		gen.SetImagePullJobCompletionTime(now.Add(-30*time.Second)))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}})
	assert.Equal(t, 30*time.Second, f.syncJob(t, "j"))
	assert.Empty(t, f.writes())
	f.clock.Step(30 * time.Second)
	assert.Equal(t, time.Duration(0), f.syncJob(t, "j"))
	w := f.writes()
	require.Len(t, w, 1)
	assert.Equal(t, "delete", w[0].GetVerb())
	_, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Get(context.Background(), "j", metav1.GetOptions{})
	assert.True(t, err != nil, "deleted")
}

func TestNeverNewNodeAndRepull(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobCompletionType(v1beta1.Never), gen.SetImagePullJobParallelism(intstr.FromInt32(5)))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "j")
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	after := f.syncJob(t, "j")
	st := f.job(t, "j").Status
	assert.Nil(t, st.CompletionTime, "Never jobs do not complete")
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, DefaultRepullPeriod, after, "looks again when the result is due")

	// A node joins: it gets the image.
	_, err := f.kruise.AppsV1beta1().NodeImages().Create(context.Background(), nodeImage("n2"), metav1.CreateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	f.ctrl.nodeImageAdded(f.ni(t, "n2"))
	assert.True(t, f.drainJobs()[testNS+"/j"], "a new node queues the all-nodes job")
	f.step(t, "j")
	require.NotNil(t, f.tagOn(t, "n2", repo, "v1"))
	assert.True(t, hasOwner(f.tagOn(t, "n2", repo, "v1"), job.UID))

	// A day later the image is pulled again on n1: the version is bumped.
	f.report(t, "n2", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.clock.Step(DefaultRepullPeriod)
	f.step(t, "j")
	assert.Equal(t, int64(2), f.tagOn(t, "n1", repo, "v1").Version)
	assert.Equal(t, int64(2), f.tagOn(t, "n2", repo, "v1").Version)
	st = f.job(t, "j").Status
	assert.Equal(t, int32(2), st.Active)
	assert.Equal(t, int32(0), st.Succeeded)
	// A second sync before the daemon answers does not bump again.
	f.step(t, "j")
	assert.Equal(t, int64(2), f.tagOn(t, "n1", repo, "v1").Version)

	// A failed node is retried after RetryFailedPeriod.
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseFailed)
	f.step(t, "j")
	assert.Equal(t, int64(2), f.tagOn(t, "n1", repo, "v1").Version)
	f.clock.Step(DefaultRetryFailedPeriod)
	f.step(t, "j")
	assert.Equal(t, int64(3), f.tagOn(t, "n1", repo, "v1").Version)
}

func TestOrphanOwnerCleanup(t *testing.T) {
	gone := newJob("gone", image)
	fresh := newJob("fresh", image) // on the API server, not yet cached
	other := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: testNS, Name: "p", UID: "pod-uid"}
	ni := nodeImage("n1",
		gen.AddNodeImageTags(repo, v1beta1.ImageTagSpec{Tag: "v1", Version: 1, OwnerReferences: []corev1.ObjectReference{jobRef(gone), jobRef(fresh)}}),
		gen.AddNodeImageTags("other", v1beta1.ImageTagSpec{Tag: "v1", Version: 1, OwnerReferences: []corev1.ObjectReference{jobRef(gone)}}),
		gen.AddNodeImageTags("kept", v1beta1.ImageTagSpec{Tag: "v1", Version: 1, OwnerReferences: []corev1.ObjectReference{other}}))
	f := newFixture(t, objects{apiOnlyJobs: []*v1beta1.ImagePullJob{fresh}, nodeImages: []*v1beta1.NodeImage{ni}})
	_, err := f.ctrl.syncNodeImage(ctx(t), "n1")
	require.NoError(t, err)
	spec := f.ni(t, "n1").Spec
	assert.Equal(t, []corev1.ObjectReference{jobRef(fresh)}, spec.Images[repo].Tags[0].OwnerReferences)
	assert.NotContains(t, spec.Images, "other", "image without tags removed")
	assert.Contains(t, spec.Images, "kept", "non-job owners untouched")
	gets := 0
	for _, a := range f.kruise.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "imagepulljobs" {
			gets++
		}
	}
	assert.Equal(t, 2, gets, "one live GET per job missing from the cache")
}

func TestNoWriteWhenUnchanged(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobParallelism(intstr.FromInt32(2)))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1"), nodeImage("n2")}})
	f.step(t, "j")
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhasePulling)
	f.step(t, "j")
	f.kruise.ClearActions()
	f.syncJob(t, "j")
	f.ctrl.nodeQueue.Add("n1")
	f.ctrl.nodeQueue.Add("n2")
	f.syncNodes(t)
	assert.Empty(t, f.writes())
}

func TestInvalidImage(t *testing.T) {
	job := newJob("j", "Bad Image!")
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "j")
	st := f.job(t, "j").Status
	require.NotNil(t, st.CompletionTime)
	assert.Contains(t, st.Message, `Failed: invalid image reference "Bad Image!"`)
	ev := f.events()
	require.Len(t, ev, 2)
	assert.True(t, strings.HasPrefix(ev[0], "Warning InvalidImage invalid image reference"), ev[0])
	assert.Empty(t, f.ni(t, "n1").Spec.Images)
}

func TestDeletingJobDropsProtectionFinalizer(t *testing.T) {
	job := newJob("j", image)
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "j")
	require.NotNil(t, f.tagOn(t, "n1", repo, "v1"))
	live := f.job(t, "j")
	live.Finalizers = []string{v1beta1.ProtectionFinalizer}
	live.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	_, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Update(context.Background(), live, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh(t)
	f.step(t, "j")
	assert.Empty(t, f.ni(t, "n1").Spec.Images)
	assert.True(t, f.drainJobs()[testNS+"/j"], "node sync queues the deleting job")
	f.syncJob(t, "j")
	assert.Empty(t, f.job(t, "j").Finalizers)
}

// TestProportionalWork: events queue only the jobs they concern.
func TestProportionalWork(t *testing.T) {
	var jobs []*v1beta1.ImagePullJob
	for i := range 50 {
		jobs = append(jobs, newJob(fmt.Sprintf("j%d", i), fmt.Sprintf("%s%d:v1", repo, i),
			gen.SetImagePullJobParallelism(intstr.FromInt32(100))))
	}
	jobs = append(jobs,
		newJob("lbl", "busybox:v1", gen.SetImagePullJobNodeSelector(map[string]string{"pool": "a"})),
		newJob("pods", "nginx:v1", gen.SetImagePullJobPodSelector(map[string]string{"app": "x"})),
	)
	// Both selector jobs have a node (n2), so they run.
	nis := []*v1beta1.NodeImage{
		nodeImage("n1", gen.SetNodeImageLabels(map[string]string{"pool": "b"})),
		nodeImage("n2", gen.SetNodeImageLabels(map[string]string{"pool": "a"})),
	}
	appX := gen.AddPodLabels(map[string]string{"app": "x"})
	f := newFixture(t, objects{jobs: jobs, nodeImages: nis, pods: []*corev1.Pod{pod("p0", "n2", appX)}})
	for _, j := range jobs {
		f.syncJob(t, j.Name)
	}
	f.syncNodes(t)
	for i := range 50 {
		f.report(t, "n1", fmt.Sprintf("%s%d", repo, i), "v1", v1beta1.ImagePhasePulling)
	}
	f.drainJobs()
	f.syncNodes(t) // empties the node queue

	// One tag's status changes among 50 (plus progress-free noise elsewhere).
	old := f.ni(t, "n1")
	cur := old.DeepCopy()
	st := cur.Status.ImageStatuses[repo+"7"]
	st.Tags[0].Phase = v1beta1.ImagePhaseSucceeded
	cur.Status.ImageStatuses[repo+"7"] = st
	cur.Status.Succeeded++
	f.ctrl.nodeImageUpdated(old, cur)
	assert.Equal(t, map[string]bool{testNS + "/j7": true}, f.drainJobs())
	assert.Zero(t, f.ctrl.nodeQueue.Len(), "a status update queues no NodeImage sync")

	// A status update that changes no tag queues nothing.
	cur2 := cur.DeepCopy()
	cur2.Status.Pulling = 3
	f.ctrl.nodeImageUpdated(cur, cur2)
	assert.Empty(t, f.drainJobs())

	// A label change queues only the label-selector job whose match changed.
	relabelled := gen.NodeImageFrom(cur, gen.SetNodeImageLabels(map[string]string{"pool": "a"}))
	f.ctrl.nodeImageUpdated(cur, relabelled)
	assert.Equal(t, map[string]bool{testNS + "/lbl": true}, f.drainJobs())
	unrelated := gen.NodeImageFrom(cur, gen.SetNodeImageLabels(map[string]string{"pool": "b", "zone": "z"}))
	f.ctrl.nodeImageUpdated(cur, unrelated)
	assert.Empty(t, f.drainJobs())

	// Pods: only a matching, scheduled pod's node/label change counts.
	p := pod("p", "n1", appX)
	f.ctrl.podChanged(nil, p)
	assert.Equal(t, map[string]bool{testNS + "/pods": true}, f.drainJobs())
	p2 := gen.PodFrom(p, gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	f.ctrl.podChanged(p, p2)
	assert.Empty(t, f.drainJobs(), "a status-only pod update")
	f.ctrl.podChanged(nil, pod("q", "n1", gen.AddPodLabels(map[string]string{"app": "nope"})))
	assert.Empty(t, f.drainJobs())
	f.ctrl.podChanged(nil, pod("r", "", appX))
	assert.Empty(t, f.drainJobs(), "unscheduled")

	// A status-only update of a job (our own write) queues nothing.
	j := f.job(t, "j1")
	j2 := j.DeepCopy()
	j2.Status.Message = "x"
	f.ctrl.jobUpdated(j, j2)
	assert.Empty(t, f.drainJobs())
}
