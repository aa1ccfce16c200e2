package spread

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func adaptive(seconds int32) appsv1alpha1.WorkloadSpreadScheduleStrategy {
	return appsv1alpha1.WorkloadSpreadScheduleStrategy{Type: appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: ptr.To(seconds)}}
}

func cond(status corev1.ConditionStatus, since time.Duration) []appsv1alpha1.WorkloadSpreadSubsetCondition {
	return []appsv1alpha1.WorkloadSpreadSubsetCondition{{Type: appsv1alpha1.SubsetSchedulable, Status: status, LastTransitionTime: at(since)}}
}

func TestAdaptive(t *testing.T) {
	tests := []struct {
		name       string
		strategy   appsv1alpha1.WorkloadSpreadScheduleStrategy
		old        []appsv1alpha1.WorkloadSpreadSubsetStatus
		pods       []*corev1.Pod
		reschedule []string
		conds      []corev1.ConditionStatus // per subset; "" no condition
		recovered  []string
		requeue    time.Duration
	}{{
		name:     "Fixed: no condition, nothing moved",
		strategy: appsv1alpha1.WorkloadSpreadScheduleStrategy{},
		old:      []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Conditions: cond(corev1.ConditionFalse, 0)}},
		pods:     []*corev1.Pod{newPod("p1", "a", unschedulableSince(tNow.Add(-time.Hour)))},
		conds:    []corev1.ConditionStatus{"", ""},
	}, {
		name:     "Adaptive without rescheduleCriticalSeconds: as Fixed",
		strategy: adaptive(0),
		pods:     []*corev1.Pod{newPod("p1", "a", unschedulableSince(tNow.Add(-time.Hour)))},
		conds:    []corev1.ConditionStatus{"", ""},
	}, {
		name:       "a pod unschedulable past the critical time in a non-last subset is moved on; the subset turns False",
		strategy:   adaptive(30),
		pods:       []*corev1.Pod{newPod("late", "a", unschedulableSince(tNow.Add(-31*time.Second))), newPod("young", "a", unschedulableSince(tNow.Add(-10*time.Second)))},
		reschedule: []string{"late"},
		conds:      []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue},
		requeue:    20 * time.Second,
	}, {
		name:     "the last subset's pods are never moved; it is always True",
		strategy: adaptive(30),
		old:      []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "b", Conditions: cond(corev1.ConditionFalse, -time.Second)}},
		pods:     []*corev1.Pod{newPod("p", "b", unschedulableSince(tNow.Add(-time.Hour)))},
		conds:    []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue},
	}, {
		name:     "a pod being scheduled, bound or terminating is not unschedulable",
		strategy: adaptive(30),
		pods: []*corev1.Pod{newPod("bound", "a"), newPod("gone", "a", unschedulableSince(tNow.Add(-time.Hour)), terminating()),
			newPod("waiting", "a", unschedulableSince(tNow.Add(-time.Hour)), func(p *corev1.Pod) { p.Status.Conditions[0].Reason = "SchedulerError" })},
		conds: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue},
	}, {
		name:     "False stays False for 300 s after it turned so",
		strategy: adaptive(30),
		old:      []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Conditions: cond(corev1.ConditionFalse, -100*time.Second)}},
		conds:    []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue},
		requeue:  200 * time.Second,
	}, {
		name:      "and recovers after 300 s",
		strategy:  adaptive(30),
		old:       []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Conditions: cond(corev1.ConditionFalse, -300*time.Second)}},
		conds:     []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue},
		recovered: []string{"a"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWS("Deployment", subset("a", "5"), subset("b", ""))
			ws.Spec.ScheduleStrategy = tt.strategy
			ws.Status.SubsetStatuses = tt.old
			res, err := ComputeStatus(ws, Group(ws, tt.pods, nil), 5, tNow)
			require.NoError(t, err)
			var names []string
			for _, p := range res.Reschedule {
				names = append(names, p.Name)
			}
			assert.Equal(t, tt.reschedule, names)
			for i, want := range tt.conds {
				c := oldCondition(&res.Status.SubsetStatuses[i])
				if want == "" {
					assert.Nil(t, c)
					continue
				}
				require.NotNil(t, c)
				assert.Equal(t, want, c.Status, res.Status.SubsetStatuses[i].Name)
			}
			assert.Equal(t, tt.recovered, res.Recovered)
			assert.Equal(t, tt.requeue, res.Requeue)
		})
	}
}

func TestSchedulableKeepsTransitionTime(t *testing.T) {
	old := cond(corev1.ConditionFalse, -10*time.Second)[0]
	c, recovered, next := schedulableCondition(&old, false, true, tNow)
	assert.Equal(t, old, c)
	assert.False(t, recovered)
	assert.Zero(t, next)
	c, _, _ = schedulableCondition(nil, false, false, tNow)
	assert.Equal(t, corev1.ConditionTrue, c.Status)
	assert.Equal(t, at(0), c.LastTransitionTime)
}
