package predownload

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// jobsFixture is Jobs over fake clients, with cached is in the informer's cache (and the API).
type jobsFixture struct {
	jobs     *Jobs
	kube     *kubefake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	ds       *appsv1beta1.DaemonSet
	owner    Owner
	update   *appsv1.ControllerRevision
}

func newJobsFixture(t *testing.T, cached ...*appsv1beta1.ImagePullJob) *jobsFixture {
	t.Helper()
	ds, owner := testOwner()
	update := updateRevision("agent-2", "2")
	var objs []runtime.Object
	for _, j := range cached {
		objs = append(objs, j)
	}
	kruise := kruisefake.NewSimpleClientset(objs...)
	factory := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	inf := factory.Apps().V1beta1().ImagePullJobs()
	kube := kubefake.NewClientset(update)
	jobs, err := NewJobs(JobsConfig{Client: kube, KruiseClient: kruise, Jobs: inf, Kind: daemonSetKind})
	require.NoError(t, err)
	for _, j := range cached {
		require.NoError(t, inf.Informer().GetIndexer().Add(j))
	}
	kruise.ClearActions()
	return &jobsFixture{jobs: jobs, kube: kube, kruise: kruise, recorder: record.NewFakeRecorder(10), ds: ds, owner: owner, update: update}
}

func (f *jobsFixture) writes() []string { return gen.Writes(f.kruise.Actions(), "imagepulljobs") }

func (f *jobsFixture) revisionLabels(t *testing.T) map[string]string {
	rev, err := f.kube.AppsV1().ControllerRevisions("ns").Get(context.Background(), f.update.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return rev.Labels
}

func (f *jobsFixture) plan(images ...ContainerImage) Plan {
	return Build(Request{Owner: f.owner, Update: f.update, Images: images, Settings: Settings{Parallelism: 1}})
}

func TestJobsApply(t *testing.T) {
	main := ContainerImage{Container: "main", Image: "agent:2"}
	log := ContainerImage{Container: "log", Image: "log:2"}

	t.Run("create: jobs, Events, revision labelled created", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newJobsFixture(t)
		require.NoError(t, f.jobs.Apply(ctx, f.recorder, f.ds, f.update, f.plan(main, log)))
		assert.Equal(t, []string{"create agent-2-main", "create agent-2-log"}, f.writes())
		assert.Equal(t, "true", f.revisionLabels(t)[appsv1beta1.ImagePreDownloadCreatedKey])
		assert.Equal(t, []string{
			"Normal " + ReasonCreatedImagePullJob + " created ImagePullJob agent-2-main for image: agent:2",
			"Normal " + ReasonCreatedImagePullJob + " created ImagePullJob agent-2-log for image: log:2",
		}, gen.DrainEvents(f.recorder))
	})

	t.Run("a cached job is not created again", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		existing := f0(t).plan(main).Jobs[0]
		f := newJobsFixture(t, existing)
		require.NoError(t, f.jobs.Apply(ctx, f.recorder, f.ds, f.update, f.plan(main, log)))
		assert.Equal(t, []string{"create agent-2-log"}, f.writes())
	})

	t.Run("a job the cache misses but the API has counts as created", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newJobsFixture(t)
		f.kruise.PrependReactor("create", "imagepulljobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apiAlreadyExists(a.(k8stesting.CreateAction).GetObject().(*appsv1beta1.ImagePullJob).Name)
		})
		require.NoError(t, f.jobs.Apply(ctx, f.recorder, f.ds, f.update, f.plan(main)))
		assert.Equal(t, "true", f.revisionLabels(t)[appsv1beta1.ImagePreDownloadCreatedKey])
	})

	t.Run("a failed creation: Event, error, revision not labelled", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newJobsFixture(t)
		f.kruise.PrependReactor("create", "imagepulljobs", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("quota exceeded")
		})
		err := f.jobs.Apply(ctx, f.recorder, f.ds, f.update, f.plan(main))
		require.ErrorContains(t, err, "quota exceeded")
		assert.Contains(t, strings.Join(gen.DrainEvents(f.recorder), "\n"), "Warning "+ReasonFailedCreateImagePullJob)
		assert.NotContains(t, f.revisionLabels(t), appsv1beta1.ImagePreDownloadCreatedKey)
	})

	t.Run("ignore: revision labelled ignored, no job", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newJobsFixture(t)
		require.NoError(t, f.jobs.Apply(ctx, f.recorder, f.ds, f.update, IgnorePlan("why not")))
		assert.Empty(t, f.writes())
		assert.Equal(t, "true", f.revisionLabels(t)[appsv1beta1.ImagePreDownloadIgnoredKey])
	})

	t.Run("nothing: no write at all", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newJobsFixture(t)
		f.kube.ClearActions()
		require.NoError(t, f.jobs.Apply(ctx, f.recorder, f.ds, f.update, Plan{Reason: "waiting"}))
		assert.Empty(t, f.writes())
		assert.Empty(t, f.kube.Actions())
	})
}

// f0 is a fixture to build plans with.
func f0(t *testing.T) *jobsFixture { return newJobsFixture(t) }

func apiAlreadyExists(name string) error {
	return apierrors.NewAlreadyExists(appsv1beta1.Resource("imagepulljobs"), name)
}

func TestJobsDeleteStale(t *testing.T) {
	job := func(name, hash string, mods ...func(*appsv1beta1.ImagePullJob)) *appsv1beta1.ImagePullJob {
		_, owner := testOwner()
		j := gen.ImagePullJob(name, gen.SetImagePullJobNamespace("ns"), gen.SetImagePullJobUID(types.UID("uid-"+name)))
		j.Labels = map[string]string{revision.HashLabel: hash}
		j.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner.Object, owner.Kind)}
		for _, m := range mods {
			m(j)
		}
		return j
	}
	notOwned := func(j *appsv1beta1.ImagePullJob) { j.OwnerReferences[0].UID = "other" }
	deleting := func(j *appsv1beta1.ImagePullJob) { j.DeletionTimestamp = &metav1.Time{} }
	cases := []struct {
		name       string
		updateHash string
		jobs       []*appsv1beta1.ImagePullJob
		want       []string
	}{
		{name: "keeps the update revision's jobs", updateHash: "2",
			jobs: []*appsv1beta1.ImagePullJob{job("agent-1-main", "1"), job("agent-2-main", "2")}, want: []string{"delete agent-1-main"}},
		{name: "update done: deletes all", updateHash: "",
			jobs: []*appsv1beta1.ImagePullJob{job("agent-1-main", "1"), job("agent-2-main", "2")},
			want: []string{"delete agent-1-main", "delete agent-2-main"}},
		{name: "leaves others' and deleted jobs", updateHash: "",
			jobs: []*appsv1beta1.ImagePullJob{job("x-main", "1", notOwned), job("agent-1-main", "1", deleting)}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newJobsFixture(t, tc.jobs...)
			require.NoError(t, f.jobs.DeleteStale(ctx, f.recorder, f.ds, tc.updateHash))
			assert.ElementsMatch(t, tc.want, f.writes())
		})
	}

	t.Run("a failed delete: Event and error", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newJobsFixture(t, job("agent-1-main", "1"))
		f.kruise.PrependReactor("delete", "imagepulljobs", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("forbidden")
		})
		require.ErrorContains(t, f.jobs.DeleteStale(ctx, f.recorder, f.ds, "2"), "forbidden")
		assert.Contains(t, strings.Join(gen.DrainEvents(f.recorder), "\n"), "Warning "+ReasonPreDownloadFailed)
	})
}
