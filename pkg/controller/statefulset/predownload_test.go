package statefulset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func stsPartition(p int32) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(p) }
}

func stsParallel(maxUnavailable string) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.Parse(maxUnavailable))
	}
}

func templateOf(t *testing.T, rev *appsv1.ControllerRevision) *corev1.PodTemplateSpec {
	t.Helper()
	tmpl := &corev1.PodTemplateSpec{}
	require.NoError(t, revision.DecodeData(rev.Data.Raw, tmpl, revision.TemplatePath...))
	return tmpl
}

func TestPlanPreDownload(t *testing.T) {
	recreate := func(s *appsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreatePodUpdateStrategyType
	}
	onDelete := func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }
	withEnv := func(s *appsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	}
	minReady := func(n int32) func(*appsv1beta1.StatefulSet) {
		return func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{ImagePreDownloadMinUpdatedReadyPods: &n}
		}
	}
	cases := []struct {
		name         string
		replicas     int32
		oldImage     string
		mods         []gen.StatefulSetModifier
		newOnly      func(*appsv1beta1.StatefulSet) // changes the new template only
		updatedReady int
		revLabel     string
		want         predownload.Action
		reason       string
	}{
		{name: "no change", replicas: 5, oldImage: "app:2", mods: stsMods(inPlace), want: predownload.Nothing, reason: "no update"},
		{name: "already created", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace), revLabel: appsv1beta1.ImagePreDownloadCreatedKey,
			want: predownload.Nothing, reason: "already created"},
		{name: "already ignored", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace), revLabel: appsv1beta1.ImagePreDownloadIgnoredKey,
			want: predownload.Nothing, reason: "already ignored"},
		{name: "no rollingUpdate: recreated", replicas: 5, oldImage: "app:1", want: predownload.Ignore, reason: "recreated"},
		{name: "ReCreate", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, recreate), want: predownload.Ignore, reason: "recreated"},
		{name: "OnDelete", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, onDelete), want: predownload.Ignore, reason: "recreated"},
		{name: "3 replicas", replicas: 3, oldImage: "app:1", mods: stsMods(inPlace), want: predownload.Ignore, reason: "replicas 3"},
		{name: "ordered: one pod at a time", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace), want: predownload.Create},
		{name: "ordered: maxUnavailable does not count", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		}), want: predownload.Create},
		{name: "parallel, all at once", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, stsParallel("100%")), want: predownload.Ignore, reason: "first batch"},
		{name: "parallel, all at once but a partition", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, stsParallel("100%"), stsPartition(2)),
			want: predownload.Create},
		{name: "parallel, two at once", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, stsParallel("2")), want: predownload.Create},
		{name: "not in place", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace), newOnly: withEnv, want: predownload.Ignore, reason: "in place"},
		{name: "waits for updated ready pods", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, minReady(2)), updatedReady: 1,
			want: predownload.Nothing, reason: "waiting for 2"},
		{name: "enough updated ready pods", replicas: 5, oldImage: "app:1", mods: stsMods(inPlace, minReady(2)), updatedReady: 2,
			want: predownload.Create},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := revisionOf(t, statefulSet(tc.replicas, tc.oldImage, tc.mods...), 1)
			set := statefulSet(tc.replicas, "app:2", tc.mods...)
			if tc.newOnly != nil {
				tc.newOnly(set)
			}
			upd := revisionOf(t, set, 2)
			if tc.revLabel != "" {
				upd.Labels[tc.revLabel] = "true"
			}
			plan, err := PlanPreDownload(PreDownloadInput{StatefulSet: set, Move: predownload.Move{Current: cur, Update: upd,
				CurrentTemplate: templateOf(t, cur), UpdateTemplate: templateOf(t, upd), UpdatedReady: tc.updatedReady}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, plan.Action, plan.Reason)
			assert.Contains(t, plan.Reason, tc.reason)
			if tc.want == predownload.Create {
				require.Len(t, plan.Jobs, 1)
				assert.Equal(t, upd.Name+"-main", plan.Jobs[0].Name)
				assert.Equal(t, "app:2", plan.Jobs[0].Spec.Image)
				assert.Equal(t, "StatefulSet", metav1.GetControllerOf(plan.Jobs[0]).Kind)
			}
		})
	}
}

func stsMods(m ...gen.StatefulSetModifier) []gen.StatefulSetModifier { return m }

func TestPlanPreDownloadBadMaxUnavailable(t *testing.T) {
	set := statefulSet(5, "app:2", inPlace, stsParallel("lots"))
	cur, upd := revisionOf(t, statefulSet(5, "app:1", inPlace), 1), revisionOf(t, set, 2)
	_, err := PlanPreDownload(PreDownloadInput{StatefulSet: set, Move: predownload.Move{Current: cur, Update: upd,
		CurrentTemplate: templateOf(t, cur), UpdateTemplate: templateOf(t, upd)}})
	require.ErrorContains(t, err, "maxUnavailable")
}

func TestPreDownloadSync(t *testing.T) {
	old := statefulSet(5, "app:1", inPlace)
	oldRev := revisionOf(t, old, 1)
	objects := func(set *appsv1beta1.StatefulSet, rev *appsv1.ControllerRevision, extra ...runtime.Object) []runtime.Object {
		objs := append([]runtime.Object{oldRev}, extra...)
		for i := range 5 {
			objs = append(objs, runningPod(t, set, rev, i))
		}
		return objs
	}
	updating := func() *appsv1beta1.StatefulSet {
		set := statefulSet(5, "app:2", inPlace)
		set.Status.CurrentRevision = oldRev.Name
		return set
	}
	updateRevision := func(f *fixture) *appsv1.ControllerRevision {
		rev, err := gen.RevisionOtherThan(context.Background(), f.kube, testNS, oldRev.Name)
		require.NoError(t, err)
		return rev
	}

	t.Run("gate off: no job", func(t *testing.T) {
		f := newFixture(t, updating(), objects(old, oldRev)...)
		f.sync()
		assert.Empty(t, gen.Writes(f.kruise.Actions(), "imagepulljobs"))
	})

	t.Run("gate on: a job, the revision labelled, the rollout goes on", func(t *testing.T) {
		f := newFixtureWith(t, fixtureExtras{preDownload: true}, updating(), objects(old, oldRev)...)
		f.sync()
		upd := updateRevision(f)
		name := upd.Name + "-main"
		assert.Equal(t, []string{"create " + name}, gen.Writes(f.kruise.Actions(), "imagepulljobs"))
		assert.Equal(t, "true", upd.Labels[appsv1beta1.ImagePreDownloadCreatedKey])
		events := f.events()
		assert.Contains(t, events, predownload.ReasonCreatedImagePullJob+" created ImagePullJob "+name)
		assert.Contains(t, events, ReasonSuccessfulUpdateInPlace)
	})

	t.Run("update done: the jobs are deleted", func(t *testing.T) {
		set := statefulSet(5, "app:2", inPlace)
		rev := revisionOf(t, set, 2)
		set.Status.CurrentRevision = rev.Name
		job := gen.ImagePullJob(rev.Name+"-main", gen.SetImagePullJobNamespace(testNS))
		job.Labels = map[string]string{revision.HashLabel: rev.Labels[revision.HashLabel]}
		job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)}
		f := newFixtureWith(t, fixtureExtras{preDownload: true, jobs: []*appsv1beta1.ImagePullJob{job}}, set, objects(set, rev, rev)...)
		f.sync()
		assert.Equal(t, []string{"delete " + job.Name}, gen.Writes(f.kruise.Actions(), "imagepulljobs"))
	})
}
