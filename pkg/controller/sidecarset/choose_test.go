package sidecarset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// cloneSetUpdating is a pod whose own workload's in-place update waits for container app.
func cloneSetUpdating(p *corev1.Pod) {
	gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z",` +
		`"lastContainerStatuses":{"app":{"imageID":"sha-app","containerID":"cri://` + p.Name + `-app"}}}`})(p)
}

func TestChoose(t *testing.T) {
	v1, v2 := sidecarSetAt("1"), sidecarSetAt("2")
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	cases := []struct {
		name string
		ss   *appsv1beta1.SidecarSet
		// pods are built at v1 unless named in atV2; mods change a pod by index.
		n               int
		atV2            map[int]bool
		mods            map[int]gen.PodModifier
		wantUpgrade     []string
		wantNot         []string
		wantWaitingPods []string
	}{{
		name: "maxUnavailable defaults to one", ss: v2, n: 4,
		wantUpgrade: []string{"p-0"},
	}, {
		name: "maxUnavailable 2", ss: gen.SidecarSetFrom(v2, gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(2))), n: 4,
		wantUpgrade: []string{"p-0", "p-1"},
	}, {
		name: "maxUnavailable 50% of 4", ss: gen.SidecarSetFrom(v2, gen.SetSidecarSetMaxUnavailable(intstr.FromString("50%"))), n: 4,
		wantUpgrade: []string{"p-0", "p-1"},
	}, {
		name: "a candidate not ready is upgraded without budget, and a ready one by it", ss: v2, n: 3,
		mods:        map[int]gen.PodModifier{1: notReady},
		wantUpgrade: []string{"p-1", "p-0"},
	}, {
		name: "partition keeps 3 of 4", ss: gen.SidecarSetFrom(v2, gen.SetSidecarSetPartition(intstr.FromInt32(3)), gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(4))), n: 4,
		wantUpgrade: []string{"p-0"},
	}, {
		name: "partition 50% of 4", ss: gen.SidecarSetFrom(v2, gen.SetSidecarSetPartition(intstr.FromString("50%")), gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(4))), n: 4,
		wantUpgrade: []string{"p-0", "p-1"},
	}, {
		// OpenKruise's rule: a percentage below 100% keeps at most all but one pod.
		name: "partition 99% of 4 still upgrades one", ss: gen.SidecarSetFrom(v2, gen.SetSidecarSetPartition(intstr.FromString("99%")), gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(4))), n: 4,
		wantUpgrade: []string{"p-0"},
	}, {
		name: "partition 100% of 4 upgrades none", ss: gen.SidecarSetFrom(v2, gen.SetSidecarSetPartition(intstr.FromString("100%")), gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(4))), n: 4,
	}, {
		name: "partition already reached", ss: gen.SidecarSetFrom(v2, gen.SetSidecarSetPartition(intstr.FromInt32(2)), gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(4))), n: 4,
		atV2: map[int]bool{0: true, 1: true},
	}, {
		name: "updateStrategy.selector", n: 4,
		ss: gen.SidecarSetFrom(v2, func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
			ss.Spec.UpdateStrategy.MaxUnavailable = ptrIntOrString(intstr.FromInt32(4))
		}),
		mods:        map[int]gen.PodModifier{1: gen.AddPodLabels(map[string]string{"canary": "true"}), 3: gen.AddPodLabels(map[string]string{"canary": "true"})},
		wantUpgrade: []string{"p-1", "p-3"},
	}, {
		name: "priorityStrategy first", n: 3,
		ss: gen.SidecarSetFrom(v2, func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
				{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "b"}}}}}
		}),
		mods:        map[int]gen.PodModifier{2: gen.AddPodLabels(map[string]string{"zone": "b"})},
		wantUpgrade: []string{"p-2"},
	}, {
		name: "paused", ss: gen.SidecarSetFrom(v2, func(ss *appsv1beta1.SidecarSet) { ss.Spec.UpdateStrategy.Paused = true }), n: 2,
	}, {
		name: "NotUpdate", n: 2,
		ss: gen.SidecarSetFrom(v2, func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
		}),
	}, {
		name: "more than images changed: not upgradable, reported", n: 2,
		ss:      gen.SidecarSetFrom(v2, func(ss *appsv1beta1.SidecarSet) { ss.Spec.Containers[0].Command = []string{"run", "--new"} }),
		wantNot: []string{"p-0", "p-1"},
	}, {
		name: "a pod in its workload's in-place update waits; the next one goes", ss: v2, n: 2,
		mods:            map[int]gen.PodModifier{0: cloneSetUpdating},
		wantUpgrade:     []string{"p-1"},
		wantWaitingPods: []string{podNS + "/p-0"},
	}, {
		name: "all up to date", ss: v2, n: 2, atV2: map[int]bool{0: true, 1: true},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hashesOf(tc.ss)
			require.NoError(t, err)
			var views []podView
			for i, name := range podNames("p", tc.n) {
				at := v1
				if tc.atV2[i] {
					at = v2
				}
				pod := injectedPod(t, name, at, tc.mods[i])
				v, ok := viewPod(tc.ss, h, pod)
				require.True(t, ok)
				views = append(views, v)
			}
			ch, err := choose(tc.ss, views, t0)
			require.NoError(t, err)
			assert.Equal(t, tc.wantUpgrade, names(ch.upgrade), "upgraded")
			assert.Equal(t, tc.wantNot, names(ch.notUpgradable), "not upgradable")
			var waiting []string
			for k := range ch.waiting {
				waiting = append(waiting, k)
			}
			assert.ElementsMatch(t, tc.wantWaitingPods, waiting, "waiting")
		})
	}
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestChooseRefusesABadSelector(t *testing.T) {
	ss := gen.SidecarSetFrom(sidecarSetAt("2"), func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Nope"}}}
	})
	h, err := hashesOf(ss)
	require.NoError(t, err)
	v, _ := viewPod(ss, h, injectedPod(t, "p", sidecarSetAt("1")))
	_, err = choose(ss, []podView{v}, t0)
	assert.ErrorContains(t, err, "updateStrategy.selector")
}

func TestChooseTakesHotUpgradeSidecars(t *testing.T) {
	ss := hotSetAt("2")
	h, err := hashesOf(ss)
	require.NoError(t, err)
	v, _ := viewPod(ss, h, hotPod(t, "p", hotSetAt("1")))
	require.True(t, v.upgradable, "only the image differs")
	ch, err := choose(ss, []podView{v}, t0)
	require.NoError(t, err)
	assert.Len(t, ch.upgrade, 1, "a hot-upgrade sidecar is upgraded like a cold one, by its two copies")
}
