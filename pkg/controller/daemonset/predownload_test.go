package daemonset

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func inPlaceDS(ds *appsv1beta1.DaemonSet) {
	ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType
}

func dsPartition(p int32) func(*appsv1beta1.DaemonSet) {
	return func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(p))
	}
}

func dsMaxUnavailable(v string) func(*appsv1beta1.DaemonSet) {
	return func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.Parse(v))
	}
}

func dsAnnotations(kv ...string) func(*appsv1beta1.DaemonSet) {
	return func(ds *appsv1beta1.DaemonSet) {
		ds.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			ds.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func TestPlanPreDownload(t *testing.T) {
	withEnv := func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	}
	labelled := func(key string) func(*appsv1.ControllerRevision) {
		return func(r *appsv1.ControllerRevision) { r.Labels[key] = "true" }
	}
	tmpl := func(image string, mods ...gen.DaemonSetModifier) *corev1.PodTemplateSpec {
		return &daemonSet(image, mods...).Spec.Template
	}
	cases := []struct {
		name         string
		mods         []gen.DaemonSetModifier // of the DaemonSet at agent:2
		desired      int
		old          []*corev1.PodTemplateSpec
		updatedReady int
		revMod       func(*appsv1.ControllerRevision)
		want         predownload.Action
		reason       string
		images       []string
	}{
		{name: "no pod left to update", mods: mods(inPlaceDS), desired: 3, want: predownload.Nothing, reason: "no update"},
		{name: "already created", mods: mods(inPlaceDS), desired: 3, old: tmpls(tmpl("agent:1")),
			revMod: labelled(appsv1beta1.ImagePreDownloadCreatedKey), want: predownload.Nothing, reason: "already created"},
		{name: "already ignored", mods: mods(inPlaceDS), desired: 3, old: tmpls(tmpl("agent:1")),
			revMod: labelled(appsv1beta1.ImagePreDownloadIgnoredKey), want: predownload.Nothing, reason: "already ignored"},
		{name: "Standard recreates", desired: 3, old: tmpls(tmpl("agent:1")), want: predownload.Ignore, reason: "recreated"},
		{name: "OnDelete", mods: mods(inPlaceDS, func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy.Type = appsv1beta1.OnDeleteDaemonSetStrategyType
		}), desired: 3, old: tmpls(tmpl("agent:1")), want: predownload.Ignore, reason: "recreated"},
		{name: "every node in the first batch", mods: mods(inPlaceDS, dsMaxUnavailable("100%")), desired: 3, old: tmpls(tmpl("agent:1")),
			want: predownload.Ignore, reason: "first batch"},
		{name: "one node, no partition", mods: mods(inPlaceDS), desired: 1, old: tmpls(tmpl("agent:1")), want: predownload.Ignore, reason: "first batch"},
		{name: "one node held by a partition", mods: mods(inPlaceDS, dsPartition(1)), desired: 1, old: tmpls(tmpl("agent:1")),
			want: predownload.Create, images: []string{"agent:2"}},
		{name: "all at once but a partition", mods: mods(inPlaceDS, dsMaxUnavailable("100%"), dsPartition(1)), desired: 3,
			old: tmpls(tmpl("agent:1")), want: predownload.Create, images: []string{"agent:2"}},
		{name: "one node at a time", mods: mods(inPlaceDS), desired: 3, old: tmpls(tmpl("agent:1")), want: predownload.Create, images: []string{"agent:2"}},
		{name: "not in place", mods: mods(inPlaceDS, withEnv), desired: 3, old: tmpls(tmpl("agent:1")), want: predownload.Ignore, reason: "in place"},
		{name: "old revision gone from the history", mods: mods(inPlaceDS), desired: 3, old: tmpls(nil), want: predownload.Ignore, reason: "in place"},
		{name: "only the in-place old revisions count", mods: mods(inPlaceDS), desired: 3,
			old: tmpls(tmpl("agent:0", withEnv), tmpl("agent:1")), want: predownload.Create, images: []string{"agent:2"}},
		{name: "only metadata changed", mods: mods(inPlaceDS, func(ds *appsv1beta1.DaemonSet) { ds.Spec.Template.Annotations = map[string]string{"a": "b"} }),
			desired: 3, old: tmpls(tmpl("agent:2")), want: predownload.Ignore, reason: "no image"},
		{name: "waits for updated ready pods", mods: mods(inPlaceDS, dsAnnotations(appsv1beta1.ImagePreDownloadMinUpdatedReadyPods, "1")),
			desired: 3, old: tmpls(tmpl("agent:1")), want: predownload.Nothing, reason: "waiting for 1"},
		{name: "enough updated ready pods", mods: mods(inPlaceDS, dsAnnotations(appsv1beta1.ImagePreDownloadMinUpdatedReadyPods, "1")),
			desired: 3, old: tmpls(tmpl("agent:1")), updatedReady: 1, want: predownload.Create, images: []string{"agent:2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := daemonSet("agent:2", tc.mods...)
			upd := revisionOf(t, ds, 2)
			if tc.revMod != nil {
				tc.revMod(upd)
			}
			b, err := ResolveBudget(ds, tc.desired)
			require.NoError(t, err)
			plan := PlanPreDownload(PreDownloadInput{DaemonSet: ds, Budget: b, Desired: tc.desired, Update: upd,
				UpdateTemplate: &ds.Spec.Template, OldTemplates: tc.old, UpdatedReady: tc.updatedReady})
			assert.Equal(t, tc.want, plan.Action, plan.Reason)
			assert.Contains(t, plan.Reason, tc.reason)
			var images []string
			for _, j := range plan.Jobs {
				images = append(images, j.Spec.Image)
			}
			assert.Equal(t, tc.images, images)
		})
	}
}

func mods(m ...gen.DaemonSetModifier) []gen.DaemonSetModifier      { return m }
func tmpls(t ...*corev1.PodTemplateSpec) []*corev1.PodTemplateSpec { return t }

func TestPlanPreDownloadJob(t *testing.T) {
	ds := daemonSet("agent:2", inPlaceDS, dsAnnotations(appsv1beta1.ImagePreDownloadParallelismKey, "2",
		appsv1beta1.ImagePreDownloadTimeoutSecondsKey, "60"))
	upd := revisionOf(t, ds, 2)
	b, err := ResolveBudget(ds, 3)
	require.NoError(t, err)
	plan := PlanPreDownload(PreDownloadInput{DaemonSet: ds, Budget: b, Desired: 3, Update: upd, UpdateTemplate: &ds.Spec.Template,
		OldTemplates: tmpls(&daemonSet("agent:1").Spec.Template)})
	require.Len(t, plan.Jobs, 1)
	job := plan.Jobs[0]
	hash := upd.Labels[revision.HashLabel]
	assert.Equal(t, upd.Name+"-main", job.Name)
	assert.Equal(t, "DaemonSet", metav1.GetControllerOf(job).Kind)
	assert.Equal(t, []string{upd.Name, hash}, job.Spec.PodSelector.MatchExpressions[0].Values, "daemon pods carry the hash")
	assert.Equal(t, intstr.FromInt32(2), *job.Spec.Parallelism)
	assert.Equal(t, int32(60), *job.Spec.PullPolicy.TimeoutSeconds)
}

func TestPreDownloadSync(t *testing.T) {
	old := daemonSet("agent:1", inPlaceDS)
	oldRev := revisionOf(t, old, 1)
	nodes := []*corev1.Node{gen.Node("a"), gen.Node("b"), gen.Node("c")}
	oldPods := func() []*corev1.Pod {
		return []*corev1.Pod{runningPod(t, old, oldRev, "a"), runningPod(t, old, oldRev, "b"), runningPod(t, old, oldRev, "c")}
	}
	updateRevision := func(f *fixture) *appsv1.ControllerRevision {
		rev, err := gen.RevisionOtherThan(context.Background(), f.kube, testNS, oldRev.Name)
		require.NoError(t, err)
		return rev
	}

	t.Run("gate off: no job", func(t *testing.T) {
		f := newFixture(t, daemonSet("agent:2", inPlaceDS), nodes, []*appsv1.ControllerRevision{oldRev}, oldPods()...)
		f.sync()
		assert.Empty(t, gen.Writes(f.kruise.Actions(), "imagepulljobs"))
		assert.NotContains(t, updateRevision(f).Labels, appsv1beta1.ImagePreDownloadCreatedKey)
	})

	t.Run("gate on: a job for the new image, the revision labelled, one pod updated in place", func(t *testing.T) {
		f := newFixtureWith(t, fixtureExtras{preDownload: true}, daemonSet("agent:2", inPlaceDS), nodes, []*appsv1.ControllerRevision{oldRev}, oldPods()...)
		f.sync()
		upd := updateRevision(f)
		name := upd.Name + "-main"
		assert.Equal(t, []string{"create " + name}, gen.Writes(f.kruise.Actions(), "imagepulljobs"))
		assert.Equal(t, "true", upd.Labels[appsv1beta1.ImagePreDownloadCreatedKey])
		assert.Contains(t, strings.Join(gen.DrainEvents(f.recorder), "\n"), predownload.ReasonCreatedImagePullJob+" created ImagePullJob "+name)
		job, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "agent:2", job.Spec.Image)
		updated := 0
		for _, w := range f.writes() {
			if strings.HasPrefix(w, "update ") {
				updated++
			}
		}
		assert.Equal(t, 1, updated, "the rolling update goes on as before")
	})

	t.Run("update done: the jobs are deleted", func(t *testing.T) {
		ds := daemonSet("agent:2", inPlaceDS)
		rev := revisionOf(t, ds, 2)
		job := gen.ImagePullJob(rev.Name+"-main", gen.SetImagePullJobNamespace(testNS))
		job.Labels = map[string]string{revision.HashLabel: rev.Labels[revision.HashLabel]}
		job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)}
		pods := []*corev1.Pod{runningPod(t, ds, rev, "a"), runningPod(t, ds, rev, "b"), runningPod(t, ds, rev, "c")}
		f := newFixtureWith(t, fixtureExtras{preDownload: true, jobs: []*appsv1beta1.ImagePullJob{job}}, ds, nodes,
			[]*appsv1.ControllerRevision{oldRev, rev}, pods...)
		f.sync()
		assert.Equal(t, []string{"delete " + job.Name}, gen.Writes(f.kruise.Actions(), "imagepulljobs"))
	})
}
