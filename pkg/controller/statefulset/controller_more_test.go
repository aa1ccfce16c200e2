package statefulset

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
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

// OpenKruise #1606: an ordered in-place update whose inPlaceUpdate hook held a pod goes on once
// the hook is released, with reserved ordinals in the set.
func TestReleasedInPlaceHookIsFollowedUp(t *testing.T) {
	hooked := func(s *appsv1beta1.StatefulSet) {
		inPlace(s)
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
		s.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"ready-for-update": "true"}}}
	}
	old := statefulSet(2, "app:1", hooked)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(2, "app:2", hooked)
	set.Status.CurrentRevision = oldRev.Name

	// The hook holds web-2: it goes to PreparingUpdate and waits.
	held := runningPod(t, set, oldRev, 2)
	held.Labels["ready-for-update"] = "true"
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), held)
	f.sync()
	assert.Equal(t, []string{"patch pods web-2"}, f.writes())
	p, err := f.kube.CoreV1().Pods(testNS).Get(testContext(t), "web-2", metav1.GetOptions{})
	assert.NoError(t, err)
	assert.Equal(t, string(pub.LifecycleStatePreparingUpdate), p.Labels[pub.LifecycleStateKey])

	// Released: the update goes on, in place, although web-2 is not available meanwhile.
	released := runningPod(t, set, oldRev, 2)
	released.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingUpdate)
	f = newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), released)
	f.sync()
	var updated []string
	for _, a := range f.kube.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "" {
			pod := u.GetObject().(*corev1.Pod)
			assert.Equal(t, "app:2", pod.Spec.Containers[0].Image)
			updated = append(updated, pod.Name)
		}
	}
	assert.Equal(t, []string{"web-2"}, updated)
}

func TestNamespaceBeingDeletedIsNoFailure(t *testing.T) {
	set := statefulSet(1, "app:1")
	f := newFixture(t, set)
	f.kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("pods"), "web-0", errors.New("namespace is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	f.sync() // fails the test on an error
	assert.NotContains(t, f.events(), ReasonFailedCreate)
	assert.Nil(t, condition(f.status(), appsv1beta1.FailedCreatePod))
}
