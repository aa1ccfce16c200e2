package podorder_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func lifecycleState(s pub.LifecycleStateType) gen.PodModifier {
	return labels(pub.LifecycleStateKey, string(s))
}

func TestForUpdateDefaultOrder(t *testing.T) {
	cases := []struct {
		name string
		pods []*corev1.Pod
		want []string
	}{{
		name: "not scheduled, then by phase",
		pods: []*corev1.Pod{
			pod("running"),
			pod("unknown", gen.SetPodPhase(corev1.PodUnknown)),
			pod("pending", gen.SetPodPhase(corev1.PodPending), notReady()),
			pod("unscheduled", onNode(""), gen.SetPodPhase(corev1.PodPending), notReady()),
		},
		want: []string{"unscheduled", "pending", "unknown", "running"},
	}, {
		name: "not ready, ready for less time, more restarts, newer, then name",
		pods: []*corev1.Pod{
			pod("e"),
			pod("d-newer", gen.SetPodCreationTimestamp(t0.Add(time.Minute))),
			pod("c-restarted", restarts(2)),
			pod("b-ready-later", readySince(t0.Add(time.Hour))),
			pod("a-not-ready", notReady()),
			pod("a"),
		},
		want: []string{"a-not-ready", "b-ready-later", "c-restarted", "d-newer", "a", "e"},
	}, {
		// The scale-in order's cost and ranks are not part of it.
		name: "pod-deletion-cost and shared nodes are ignored",
		pods: []*corev1.Pod{
			pod("b", cost("-10"), onNode("n")),
			pod("c", onNode("n")),
			pod("a", cost("10")),
		},
		want: []string{"a", "b", "c"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range rotations(tc.pods) {
				got, err := podorder.ForUpdate(in, nil, nil)
				require.NoError(t, err)
				assert.Equal(t, tc.want, names(got), "input %v", names(in))
			}
		})
	}
}

func TestForUpdateComposes(t *testing.T) {
	priority := &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{weight(50, "canary", "true")}}
	scatter := pub.UpdateScatterStrategy{scatterTerm("zone", "a")}
	cases := []struct {
		name     string
		pods     []*corev1.Pod
		priority *pub.UpdatePriorityStrategy
		scatter  pub.UpdateScatterStrategy
		want     []string
	}{{
		name: "priority over the default order; the default order among equals",
		pods: []*corev1.Pod{
			pod("a-not-ready", notReady()),
			pod("b-canary", labels("canary", "true")),
			pod("c"),
			pod("d-canary-not-ready", labels("canary", "true"), notReady()),
		},
		priority: priority,
		want:     []string{"d-canary-not-ready", "b-canary", "a-not-ready", "c"},
	}, {
		// Default and priority order: 1 2 3 4 a5 a6; the two zone-a pods
		// go to positions 1 and 4.
		name: "scatter after priority",
		pods: []*corev1.Pod{
			pod("1", labels("canary", "true"), gen.SetPodCreationTimestamp(t0.Add(4*time.Minute))),
			pod("2", labels("canary", "true"), gen.SetPodCreationTimestamp(t0.Add(3*time.Minute))),
			pod("3", gen.SetPodCreationTimestamp(t0.Add(2*time.Minute))),
			pod("4", gen.SetPodCreationTimestamp(t0.Add(time.Minute))),
			pod("a5", labels("zone", "a")),
			pod("a6", labels("zone", "a")),
		},
		priority: priority,
		scatter:  scatter,
		want:     []string{"1", "a5", "2", "3", "a6", "4"},
	}, {
		name: "PreparingUpdate first of all, in the order before",
		pods: []*corev1.Pod{
			pod("a-canary", labels("canary", "true")),
			pod("b-preparing", lifecycleState(pub.LifecycleStatePreparingUpdate)),
			pod("c-updating", lifecycleState(pub.LifecycleStateUpdating), notReady()),
			pod("d-preparing-canary", lifecycleState(pub.LifecycleStatePreparingUpdate), labels("canary", "true")),
			pod("e-normal", lifecycleState(pub.LifecycleStateNormal)),
		},
		priority: priority,
		scatter:  scatter,
		want:     []string{"d-preparing-canary", "b-preparing", "a-canary", "c-updating", "e-normal"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range rotations(tc.pods) {
				got, err := podorder.ForUpdate(in, tc.priority, tc.scatter)
				require.NoError(t, err)
				assert.Equal(t, tc.want, names(got), "input %v", names(in))
			}
		})
	}
}

func TestForUpdateBadPriority(t *testing.T) {
	bad := &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{
		Weight: 1,
		MatchSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "a", Operator: metav1.LabelSelectorOpIn},
		}},
	}}}
	got, err := podorder.ForUpdate([]*corev1.Pod{pod("a")}, bad, nil)
	assert.ErrorContains(t, err, "weightPriority[0].matchSelector")
	assert.Nil(t, got)
}

func TestForUpdateLeavesInputAlone(t *testing.T) {
	pods := []*corev1.Pod{
		pod("d", labels("zone", "a")),
		pod("c", lifecycleState(pub.LifecycleStatePreparingUpdate)),
		pod("b", labels("rank", "5", "zone", "a")),
		pod("a", notReady(), labels("rank", "9")),
		pod("e", onNode("")),
	}
	assertUnchanged(t, pods, func(in []*corev1.Pod) {
		_, err := podorder.ForUpdate(in, ordered("rank"), pub.UpdateScatterStrategy{scatterTerm("zone", "a")})
		require.NoError(t, err)
	})
}
