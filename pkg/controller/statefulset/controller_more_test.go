package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func condition(st appsv1beta1.StatefulSetStatus, t appsv1.StatefulSetConditionType) *appsv1.StatefulSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestPausedRolloutTouchesNoPod(t *testing.T) {
	old := statefulSet(2, "app:1")
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(2, "app:2", func(s *appsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{Paused: true}
	})
	set.Status.CurrentRevision = oldRev.Name
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), runningPod(t, set, oldRev, 1))
	f.sync()
	assert.Empty(t, f.writes())
	st := f.status()
	assert.Equal(t, int32(0), st.UpdatedReplicas)
	assert.Equal(t, oldRev.Name, st.CurrentRevision)
}

func TestInPlaceOnlyRefusesAnEnvChange(t *testing.T) {
	only := func(s *appsv1beta1.StatefulSet) {
		inPlace(s)
		s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceOnlyPodUpdateStrategyType
	}
	old := statefulSet(1, "app:1", only)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(1, "app:1", only, func(s *appsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	})
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0))
	f.sync()
	assert.Empty(t, f.writes(), "InPlaceOnly neither updates nor deletes a pod for a change it cannot apply")
	c := condition(f.status(), appsv1beta1.FailedUpdatePod)
	if assert.NotNil(t, c, "FailedUpdatePod") {
		assert.Contains(t, c.Message, "web-0")
		assert.Contains(t, c.Message, "env")
	}
}

func TestReleasesAPodTheSelectorNoLongerMatches(t *testing.T) {
	set := statefulSet(1, "app:1")
	rev := revisionOf(t, set, 1)
	stray := runningPod(t, set, rev, 1)
	stray.Labels["app"] = "other"
	f := newFixture(t, set, rev, runningPod(t, set, rev, 0), stray)
	f.sync()
	assert.Equal(t, []string{"patch pods web-1"}, f.writes(), "released, not deleted as a condemned pod")
	assert.Equal(t, int32(1), f.status().Replicas)
}

func TestRollbackReusesTheOldRevision(t *testing.T) {
	set := statefulSet(2, "app:1")
	rev1 := revisionOf(t, set, 1)
	rev2 := revisionOf(t, statefulSet(2, "app:2"), 2)
	set.Status.CurrentRevision = rev1.Name
	set.Status.UpdateRevision = rev2.Name
	// One pod was updated to app:2 before the template went back to app:1.
	f := newFixture(t, set, rev1, rev2, runningPod(t, set, rev1, 0), runningPod(t, set, rev2, 1))
	f.sync()
	assert.Equal(t, []string{"delete pods web-1"}, f.writes(), "the pod at app:2 goes back")
	st := f.status()
	assert.Equal(t, rev1.Name, st.UpdateRevision, "the old revision is the update revision again")
	assert.Equal(t, int32(1), st.UpdatedReplicas)
}

func TestPriorityStrategyOrdersAParallelUpdate(t *testing.T) {
	prio := func(s *appsv1beta1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{
			UnorderedUpdate: &appsv1beta1.UnorderedUpdateStrategy{PriorityStrategy: &pub.UpdatePriorityStrategy{
				WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 100, MatchSelector: metav1LabelSelector("first", "yes")}},
			}},
		}
	}
	old := statefulSet(3, "app:1", prio)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(3, "app:2", prio)
	set.Status.CurrentRevision = oldRev.Name
	first := runningPod(t, set, oldRev, 0)
	first.Labels["first"] = "yes"
	f := newFixture(t, set, oldRev, first, runningPod(t, set, oldRev, 1), runningPod(t, set, oldRev, 2))
	f.sync()
	assert.Equal(t, []string{"delete pods web-0"}, f.writes(), "the weighted pod first, not the highest ordinal")
}

func TestParallelMaxUnavailableUpdatesSeveral(t *testing.T) {
	par := func(s *appsv1beta1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstrPercent("50%"))}
	}
	old := statefulSet(4, "app:1", par)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(4, "app:2", par)
	set.Status.CurrentRevision = oldRev.Name
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), runningPod(t, set, oldRev, 1),
		runningPod(t, set, oldRev, 2), runningPod(t, set, oldRev, 3))
	f.sync()
	assert.ElementsMatch(t, []string{"delete pods web-3", "delete pods web-2"}, f.writes())
}

func TestMinReadySecondsHoldsAnOrderedCreate(t *testing.T) {
	set := statefulSet(2, "app:1", func(s *appsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{MinReadySeconds: ptr.To[int32](30)}
	})
	rev := revisionOf(t, set, 1)
	fresh := runningPod(t, set, rev, 0)
	fresh.Status.Conditions[0].LastTransitionTime.Time = t0.Add(-10 * 1e9) // ready 10s ago
	f := newFixture(t, set, rev, fresh)
	after, err := f.ctrl.sync(testContext(t), testNS+"/web")
	assert.NoError(t, err)
	assert.Empty(t, f.writes(), "web-1 waits until web-0 has been ready for 30s")
	assert.Equal(t, int64(21), int64(after.Seconds()), "looked at again when web-0 becomes available")
	st := f.status()
	assert.Equal(t, int32(1), st.ReadyReplicas)
	assert.Equal(t, int32(0), st.AvailableReplicas)
}
