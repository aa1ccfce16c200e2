package imagepulljob

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// imageJob is a job pulling <repo>-<name>:v1 on n1, created age ago,
// changed by mods.
func imageJob(name string, age time.Duration, mods ...gen.ImagePullJobModifier) *v1beta1.ImagePullJob {
	return newJob(name, repo+"-"+name+":v1", append([]gen.ImagePullJobModifier{
		gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobCreationTimestamp(now.Add(-age)),
	}, mods...)...)
}

// requireFull checks that job name counts n1 as failed for lack of room,
// with a reason that says what did not fit.
func requireFull(t *testing.T, f *fixture, name, why string) {
	t.Helper()
	st := f.job(t, name).Status
	assert.Equal(t, []string{"n1"}, st.FailedNodes, name)
	require.Len(t, st.Failures, 1, name)
	assert.Equal(t, ReasonNodeImageFull, st.Failures[0].Reason)
	assert.Contains(t, st.Failures[0].Message, "NodeImage n1 has no room for this job's request: "+why)
	assert.Contains(t, st.Message, "(n1: NodeImageFull: NodeImage n1 has no room", name)
}

// A job whose request would push the node's NodeImage past its size budget
// is left out of it and told why; the other jobs' entries are written as
// usual.
func TestOverBudgetJobIsLeftOutAndReported(t *testing.T) {
	a := imageJob("a", 3*time.Hour, gen.SetImagePullJobPullSecrets("sa"), gen.SetImagePullJobSandboxLabels(map[string]string{"k": "a"}))
	b := imageJob("b", 2*time.Hour)
	c := imageJob("c", time.Hour)

	// The budget fits a's and b's entries exactly.
	probe := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a, b}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	probe.step(t, "a", "b")
	fits := specSize(&probe.ni(t, "n1").Spec)

	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a, b, c}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")},
		cfg: Config{NodeImageSpecBudget: fits}})
	f.step(t, "c", "a", "b") // c asks first; it is the youngest
	spec := f.ni(t, "n1").Spec
	assert.Equal(t, probe.ni(t, "n1").Spec, spec, "a's and b's entries as if c did not exist")
	assert.LessOrEqual(t, specSize(&spec), fits)
	assert.NotContains(t, spec.Images, repo+"-c")
	for _, j := range []string{"a", "b"} {
		assert.Equal(t, int32(1), f.job(t, j).Status.Active, j)
	}

	// c's next sync (queued by the node sync) counts n1 as failed.
	assert.True(t, f.drainJobs()[testNS+"/c"], "the node sync queues the job it left out")
	f.events()
	f.step(t, "c")
	requireFull(t, f, "c", "its spec would be ")
	st := f.job(t, "c").Status
	require.NotNil(t, st.CompletionTime, "a completion-Always job with every node done completes")
	assert.Equal(t, int32(1), st.Failed)
	ev := f.events()
	require.NotEmpty(t, ev)
	assert.True(t, strings.HasPrefix(ev[0], "Warning NodeImageFull NodeImage n1 has no room for this job's request: its spec would be "), ev[0])
	assert.Contains(t, ev[0], fmt.Sprintf("over the %d-byte budget", fits))

	// a and b go on as usual.
	f.report(t, "n1", repo+"-a", "v1", v1beta1.ImagePhaseSucceeded)
	f.step(t, "a")
	assert.Equal(t, "Completed: 1/1 nodes succeeded, 0 failed, 0 pulling", f.job(t, "a").Status.Message)
}

// A Never job left out gets in when room is made.
func TestLeftOutJobGetsInWhenRoomIsMade(t *testing.T) {
	a := imageJob("a", 3*time.Hour)
	c := imageJob("c", time.Hour, gen.SetImagePullJobCompletionType(v1beta1.Never))
	probe := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	probe.step(t, "a")
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a, c}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")},
		cfg: Config{NodeImageSpecBudget: specSize(&probe.ni(t, "n1").Spec)}})
	f.step(t, "a", "c")
	f.step(t, "c")
	requireFull(t, f, "c", "its spec would be ")
	assert.Nil(t, f.job(t, "c").Status.CompletionTime)

	// a finishes and withdraws: the node sync adds c and queues it.
	f.report(t, "n1", repo+"-a", "v1", v1beta1.ImagePhaseSucceeded)
	f.drainJobs()
	f.step(t, "a")
	tag := f.tagOn(t, "n1", repo+"-c", "v1")
	require.NotNil(t, tag, "c's request written once a's is gone")
	assert.True(t, hasOwner(tag, c.UID))
	assert.Nil(t, f.tagOn(t, "n1", repo+"-a", "v1"))
	assert.True(t, f.drainJobs()[testNS+"/c"])
	f.step(t, "c")
	st := f.job(t, "c").Status
	assert.Equal(t, int32(1), st.Active)
	assert.Empty(t, st.Failures)
	assert.Equal(t, "0/1 nodes succeeded, 0 failed, 1 pulling", st.Message)
}

// Jobs already on the node keep their place: an older job arriving later
// is the one left out, and then the youngest newcomer first.
func TestJobsOnTheNodeKeepTheirPlace(t *testing.T) {
	young := imageJob("young", time.Hour)
	old1 := imageJob("old1", 3*time.Hour)
	old2 := imageJob("old2", 2*time.Hour)
	probe := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{young, old1}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	probe.step(t, "young", "old1")
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{young, old1, old2}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")},
		cfg: Config{NodeImageSpecBudget: specSize(&probe.ni(t, "n1").Spec)}})
	f.step(t, "young")
	require.NotNil(t, f.tagOn(t, "n1", repo+"-young", "v1"))
	f.step(t, "old2", "old1") // both arrive; room for one: the older
	assert.NotNil(t, f.tagOn(t, "n1", repo+"-young", "v1"), "on the node first: kept")
	assert.NotNil(t, f.tagOn(t, "n1", repo+"-old1", "v1"), "the older newcomer")
	assert.Nil(t, f.tagOn(t, "n1", repo+"-old2", "v1"), "the younger newcomer is left out")
	f.step(t, "old2")
	requireFull(t, f, "old2", "its spec would be ")
}

// The schema's bounds on one image are kept too: a job whose sandbox
// labels would take the image's union past 256 is left out; the job that
// was there keeps its entry.
func TestSchemaBoundsOfTheSharedImage(t *testing.T) {
	labels := func(prefix string, n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%s%d", prefix, i)] = "v"
		}
		return m
	}
	a := newJob("a", image, gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobSandboxLabels(labels("a", 200)),
		gen.SetImagePullJobCreationTimestamp(now.Add(-2*time.Hour)))
	b := newJob("b", image, gen.SetImagePullJobNodeNames("n1"), gen.SetImagePullJobSandboxLabels(labels("b", 100)))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a, b}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "a", "b")
	img := f.ni(t, "n1").Spec.Images[repo]
	assert.Len(t, img.SandboxConfig.Labels, 200)
	assert.False(t, hasOwner(f.tagOn(t, "n1", repo, "v1"), b.UID))
	f.step(t, "b")
	requireFull(t, f, "b", "image "+repo+" would have 300 sandbox labels, at most 256")
	assert.Equal(t, int32(1), f.job(t, "a").Status.Active)
}

// At most 256 images per NodeImage: the 257th job's image is left out
// and the job says so (it used to wait, "pulling", for ever).
func TestImageCountBound(t *testing.T) {
	var jobs []*v1beta1.ImagePullJob
	for i := range v1beta1.MaxImagesPerNodeImage + 1 {
		jobs = append(jobs, imageJob(fmt.Sprintf("j%03d", i), time.Duration(1000-i)*time.Minute))
	}
	f := newFixture(t, objects{jobs: jobs, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	for _, j := range jobs {
		f.syncJob(t, j.Name)
		f.events() // the fake recorder holds 100
	}
	f.syncNodes(t)
	assert.Len(t, f.ni(t, "n1").Spec.Images, v1beta1.MaxImagesPerNodeImage)
	last := jobs[len(jobs)-1].Name
	assert.Nil(t, f.tagOn(t, "n1", repo+"-"+last, "v1"), "the youngest is left out")
	f.step(t, last)
	requireFull(t, f, last, "it would list 257 images, at most 256")
	f.step(t, "j000")
	assert.Equal(t, int32(1), f.job(t, "j000").Status.Active)
}

func TestImageProblem(t *testing.T) {
	img := func(mut func(*v1beta1.ImageSpec)) *v1beta1.ImageSpec {
		i := &v1beta1.ImageSpec{Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}}
		mut(i)
		return i
	}
	assert.Empty(t, imageProblem("r", img(func(*v1beta1.ImageSpec) {})))
	assert.Contains(t, imageProblem("r", img(func(i *v1beta1.ImageSpec) {
		i.Tags = make([]v1beta1.ImageTagSpec, v1beta1.MaxTagsPerImage+1)
	})), "image r would have 257 tags, at most 256")
	assert.Contains(t, imageProblem("r", img(func(i *v1beta1.ImageSpec) {
		i.PullSecrets = make([]v1beta1.ReferenceObject, v1beta1.MaxPullSecretsPerImage+1)
	})), "257 pull secrets")
	assert.Contains(t, imageProblem("r", img(func(i *v1beta1.ImageSpec) {
		i.Tags[0].OwnerReferences = make([]corev1ObjectReference, v1beta1.MaxOwnersPerTag+1)
	})), "tag r:v1 would have 1025 owners, at most 1024")
	assert.Contains(t, imageProblem("r", img(func(i *v1beta1.ImageSpec) {
		i.SandboxConfig = &v1beta1.SandboxConfig{Annotations: map[string]string{strings.Repeat("k", 318): ""}}
	})), "sandbox key of 318 characters, at most 317")
	assert.Contains(t, imageProblem("r", img(func(i *v1beta1.ImageSpec) {
		i.SandboxConfig = &v1beta1.SandboxConfig{Labels: map[string]string{"a": strings.Repeat("v", 200000)},
			Annotations: map[string]string{"b": strings.Repeat("v", 70000)}}
	})), "sandbox labels and annotations of 270002 characters, at most 262144")
}

// The size estimate is the JSON size of the spec, within a byte per image.
func TestSpecSize(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobParallelism(intstr.FromInt32(1)), gen.SetImagePullJobPullSecrets("s"),
		gen.SetImagePullJobSandboxLabels(map[string]string{"k": "v"}))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "j")
	spec := f.ni(t, "n1").Spec
	raw, err := jsonMarshal(&spec)
	require.NoError(t, err)
	assert.InDelta(t, len(raw), specSize(&spec), 1)
}

type corev1ObjectReference = corev1.ObjectReference

var jsonMarshal = json.Marshal
