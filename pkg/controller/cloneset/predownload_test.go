package cloneset

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// templateOf decodes rev's pod template.
func templateOf(t *testing.T, rev *appsv1.ControllerRevision) *corev1.PodTemplateSpec {
	t.Helper()
	tmpl := &corev1.PodTemplateSpec{}
	require.NoError(t, revision.DecodeData(rev.Data.Raw, tmpl, revision.TemplatePath...))
	return tmpl
}

// syncedRevisionOf is the revision the controller makes of cs's template: revisionOf's, named
// with the collision count the controller reads from the status (0).
func syncedRevisionOf(t *testing.T, cs *appsv1beta1.CloneSet, number int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := revision.PatchData(cs.Spec.Template, revision.TemplatePath...)
	require.NoError(t, err)
	sel, err := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
	require.NoError(t, err)
	return revision.NewRevision(revision.Owner{Object: cs, Kind: controllerKind, Selector: sel},
		revision.Content{Data: data, Labels: cs.Spec.Template.Labels}, number, ptr.To[int32](0))
}

// twoContainers gives the template a sidecar container "log" with image logImage.
func twoContainers(logImage string) func(*appsv1beta1.CloneSet) {
	return func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, corev1.Container{Name: "log", Image: logImage})
	}
}

// planFor plans the move from old to cs, both made by cloneSet.
func planFor(t *testing.T, old, cs *appsv1beta1.CloneSet, updatedReady int, revLabels map[string]string) predownload.Plan {
	t.Helper()
	cur, upd := revisionOf(t, old, 1), revisionOf(t, cs, 2)
	for k, v := range revLabels {
		upd.Labels[k] = v
	}
	b, err := Resolve(strategyOf(cs))
	require.NoError(t, err)
	return PlanPreDownload(PreDownloadInput{CloneSet: cs, Budget: b, Policy: policyOf(cs), Move: predownload.Move{Current: cur, Update: upd,
		CurrentTemplate: templateOf(t, cur), UpdateTemplate: templateOf(t, upd), UpdatedReady: updatedReady}})
}

func TestPlanPreDownloadDecides(t *testing.T) {
	recreate := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreateCloneSetPodUpdateStrategyType
	}
	allAtOnce := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	}
	allAtOnceButPartition := func(cs *appsv1beta1.CloneSet) {
		allAtOnce(cs)
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	}
	annotated := func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Annotations = map[string]string{"note": "changed"} }
	withEnv := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	}
	minReady := func(n int32) func(*appsv1beta1.CloneSet) {
		return func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{ImagePreDownloadMinUpdatedReadyPods: &n}
		}
	}
	cases := []struct {
		name         string
		old, cs      *appsv1beta1.CloneSet
		updatedReady int
		revLabels    map[string]string
		want         predownload.Action
		jobs         int
		reason       string
	}{
		{name: "no change", old: cloneSet(5, "app:1"), cs: cloneSet(5, "app:1"), want: predownload.Nothing, reason: "no update"},
		{name: "already created", old: cloneSet(5, "app:1"), cs: cloneSet(5, "app:2"),
			revLabels: map[string]string{appsv1beta1.ImagePreDownloadCreatedKey: "true"}, want: predownload.Nothing, reason: "already created"},
		{name: "already ignored", old: cloneSet(5, "app:1"), cs: cloneSet(5, "app:2"),
			revLabels: map[string]string{appsv1beta1.ImagePreDownloadIgnoredKey: "true"}, want: predownload.Nothing, reason: "already ignored"},
		{name: "ReCreate", old: cloneSet(5, "app:1", recreate), cs: cloneSet(5, "app:2", recreate), want: predownload.Ignore, reason: "recreated"},
		{name: "3 replicas", old: cloneSet(3, "app:1"), cs: cloneSet(3, "app:2"), want: predownload.Ignore, reason: "replicas 3"},
		{name: "one batch", old: cloneSet(5, "app:1", allAtOnce), cs: cloneSet(5, "app:2", allAtOnce), want: predownload.Ignore, reason: "first batch"},
		{name: "one batch but a partition", old: cloneSet(5, "app:1", allAtOnceButPartition), cs: cloneSet(5, "app:2", allAtOnceButPartition),
			want: predownload.Create, jobs: 1},
		{name: "only metadata changes", old: cloneSet(5, "app:1"), cs: cloneSet(5, "app:1", annotated), want: predownload.Ignore, reason: "no image"},
		{name: "not in place", old: cloneSet(5, "app:1"), cs: cloneSet(5, "app:2", withEnv), want: predownload.Ignore, reason: "in place"},
		{name: "waits for updated ready pods", old: cloneSet(5, "app:1", minReady(2)), cs: cloneSet(5, "app:2", minReady(2)), updatedReady: 1,
			want: predownload.Nothing, reason: "waiting for 2"},
		{name: "enough updated ready pods", old: cloneSet(5, "app:1", minReady(2)), cs: cloneSet(5, "app:2", minReady(2)), updatedReady: 2,
			want: predownload.Create, jobs: 1},
		{name: "one job per changed image", old: cloneSet(5, "app:1", twoContainers("log:1")), cs: cloneSet(5, "app:2", twoContainers("log:2")),
			want: predownload.Create, jobs: 2},
		{name: "unchanged container has no job", old: cloneSet(5, "app:1", twoContainers("log:1")), cs: cloneSet(5, "app:2", twoContainers("log:1")),
			want: predownload.Create, jobs: 1},
		{name: "two containers, one new image", old: cloneSet(5, "app:1", twoContainers("log:1")), cs: cloneSet(5, "app:2", twoContainers("app:2")),
			want: predownload.Create, jobs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planFor(t, tc.old, tc.cs, tc.updatedReady, tc.revLabels)
			assert.Equal(t, tc.want, plan.Action, plan.Reason)
			assert.Len(t, plan.Jobs, tc.jobs)
			assert.Contains(t, plan.Reason, tc.reason)
		})
	}
}

// TestPreDownloadJobOfCloneSet checks what the CloneSet hands to pkg/workload/predownload (which tests
// the job itself): its kind, selector, template, settings from its strategy, and native sidecars.
func TestPreDownloadJobOfCloneSet(t *testing.T) {
	mods := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism: ptr.To(intstr.FromInt32(3)), ImagePreDownloadTimeoutSeconds: ptr.To[int32](120)}
		cs.Spec.Template.Spec.InitContainers = []corev1.Container{
			{Name: "proxy", Image: "proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
	}
	old := cloneSet(5, "app:1", mods)
	cs := cloneSet(5, "app:2", mods, func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.InitContainers[0].Image = "proxy:2" })
	plan := planFor(t, old, cs, 0, nil)
	require.Equal(t, predownload.Create, plan.Action, plan.Reason)
	require.Len(t, plan.Jobs, 2)
	upd := revisionOf(t, cs, 2)
	assert.Equal(t, upd.Name+"-proxy", plan.Jobs[0].Name, "a native sidecar's new image is pre-downloaded too")
	job := plan.Jobs[1]
	assert.Equal(t, upd.Name+"-main", job.Name)
	assert.Equal(t, testNS, job.Namespace)
	ref := metav1.GetControllerOf(job)
	require.NotNil(t, ref)
	assert.Equal(t, "CloneSet", ref.Kind)
	assert.Equal(t, cs.UID, ref.UID)
	assert.Equal(t, map[string]string{"app": "web", revision.HashLabel: upd.Labels[revision.HashLabel]}, job.Labels)
	assert.Equal(t, map[string]string{"app": "web"}, job.Spec.PodSelector.MatchLabels)
	assert.Equal(t, intstr.FromInt32(3), *job.Spec.Parallelism)
	assert.Equal(t, int32(120), *job.Spec.PullPolicy.TimeoutSeconds)
}

// preDownloadFixture is a controller with pre-download on or off, a CloneSet of 5 pods at the
// old revision (app:1) and its template at app:2, updated one pod at a time.
type preDownloadFixture struct {
	*fixture
	oldRev string
}

func newPreDownloadFixture(t *testing.T, gate bool, cs *appsv1beta1.CloneSet, oldRev *appsv1.ControllerRevision, objs ...runtime.Object) *preDownloadFixture {
	t.Helper()
	cs.Status.CurrentRevision = oldRev.Name
	var pods []*corev1.Pod
	for i := range 5 {
		pods = append(pods, runningPod(t, cs, oldRev, "pod"+string(rune('a'+i))))
	}
	f := newFixtureWith(t, cs, []*appsv1.ControllerRevision{oldRev}, pods, fixtureExtras{preDownload: gate, kruiseObjs: objs})
	return &preDownloadFixture{fixture: f, oldRev: oldRev.Name}
}

func (f *preDownloadFixture) sync() error {
	_, ctx := ktesting.NewTestContext(f.t)
	_, err := f.ctrl.sync(ctx, testNS+"/"+f.cs.Name)
	return err
}

// jobActions lists the kruise client's creates and deletes of ImagePullJobs.
func (f *preDownloadFixture) jobActions() []string {
	return gen.Writes(f.kruise.Actions(), "imagepulljobs")
}

// updateRevision reads the update revision, which the first sync created, from the API.
func (f *preDownloadFixture) updateRevision() *appsv1.ControllerRevision {
	f.t.Helper()
	rev, err := gen.RevisionOtherThan(context.Background(), f.kube, testNS, f.oldRev)
	require.NoError(f.t, err)
	return rev
}

func (f *preDownloadFixture) revisionLabels() map[string]string { return f.updateRevision().Labels }

func (f *preDownloadFixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestPreDownloadSync(t *testing.T) {
	t.Run("gate off: no job, no label", func(t *testing.T) {
		f := newPreDownloadFixture(t, false, cloneSet(5, "app:2"), revisionOf(t, cloneSet(5, "app:1"), 1))
		require.NoError(t, f.sync())
		assert.Empty(t, f.jobActions())
		assert.NotContains(t, f.revisionLabels(), appsv1beta1.ImagePreDownloadCreatedKey)
		assert.NotContains(t, f.revisionLabels(), appsv1beta1.ImagePreDownloadIgnoredKey)
	})

	t.Run("gate on: one job, revision labelled, no duplicate on the next sync", func(t *testing.T) {
		f := newPreDownloadFixture(t, true, cloneSet(5, "app:2"), revisionOf(t, cloneSet(5, "app:1"), 1))
		require.NoError(t, f.sync())
		name := f.updateRevision().Name + "-main"
		assert.Equal(t, []string{"create " + name}, f.jobActions())
		job, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "app:2", job.Spec.Image)
		assert.Equal(t, "true", f.revisionLabels()[appsv1beta1.ImagePreDownloadCreatedKey])
		assert.Contains(t, strings.Join(f.events(), "\n"), predownload.ReasonCreatedImagePullJob+" created ImagePullJob "+name)

		f.kruise.ClearActions()
		require.NoError(t, f.sync())
		assert.Empty(t, f.jobActions(), "the revision is labelled: nothing to create")
	})

	t.Run("jobs exist but the revision is not labelled: labelled, nothing created", func(t *testing.T) {
		cs := cloneSet(5, "app:2")
		upd := syncedRevisionOf(t, cs, 2)
		b, err := Resolve(strategyOf(cs))
		require.NoError(t, err)
		existing := PlanPreDownload(PreDownloadInput{CloneSet: cs, Budget: b, Policy: policyOf(cs), Move: predownload.Move{
			Current: revisionOf(t, cloneSet(5, "app:1"), 1), Update: upd, CurrentTemplate: templateOf(t, revisionOf(t, cloneSet(5, "app:1"), 1)),
			UpdateTemplate: templateOf(t, upd)}}).Jobs
		require.Len(t, existing, 1)
		f := newPreDownloadFixture(t, true, cs, revisionOf(t, cloneSet(5, "app:1"), 1), existing[0])
		require.NoError(t, f.sync())
		assert.Empty(t, f.jobActions())
		assert.Equal(t, "true", f.revisionLabels()[appsv1beta1.ImagePreDownloadCreatedKey])
	})

	t.Run("ReCreate: revision labelled ignored", func(t *testing.T) {
		recreate := func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreateCloneSetPodUpdateStrategyType
		}
		f := newPreDownloadFixture(t, true, cloneSet(5, "app:2", recreate), revisionOf(t, cloneSet(5, "app:1", recreate), 1))
		require.NoError(t, f.sync())
		assert.Empty(t, f.jobActions())
		assert.Equal(t, "true", f.revisionLabels()[appsv1beta1.ImagePreDownloadIgnoredKey])
	})

	t.Run("a failed creation is an Event and an error, and the revision stays unlabelled", func(t *testing.T) {
		f := newPreDownloadFixture(t, true, cloneSet(5, "app:2"), revisionOf(t, cloneSet(5, "app:1"), 1))
		f.kruise.PrependReactor("create", "imagepulljobs", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("quota exceeded")
		})
		err := f.sync()
		require.ErrorContains(t, err, "quota exceeded")
		assert.Contains(t, strings.Join(f.events(), "\n"), "Warning "+predownload.ReasonFailedCreateImagePullJob)
		assert.NotContains(t, f.revisionLabels(), appsv1beta1.ImagePreDownloadCreatedKey)
		updated := 0
		for _, a := range f.kube.Actions() {
			if a.GetVerb() == "update" && a.GetResource().Resource == "pods" && a.GetSubresource() == "" {
				updated++
			}
		}
		assert.Equal(t, 1, updated, "the update went on: one pod updated in place despite the failure")
	})

	t.Run("jobs of another revision are deleted", func(t *testing.T) {
		stale := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "web-old-main", Namespace: testNS, UID: "job-uid",
			Labels:          map[string]string{"app": "web", revision.HashLabel: "old"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cloneSet(5, "app:2"), controllerKind)}}}
		f := newPreDownloadFixture(t, true, cloneSet(5, "app:2"), revisionOf(t, cloneSet(5, "app:1"), 1), stale)
		require.NoError(t, f.sync())
		assert.ElementsMatch(t, []string{"delete web-old-main", "create " + f.updateRevision().Name + "-main"}, f.jobActions())
	})
}
