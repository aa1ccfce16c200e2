package sidecarset

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// unreadySince: the pod's Ready condition is False since at.
func unreadySince(at time.Time) gen.PodModifier {
	return gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at)})
}

// upgradedAt records SidecarSet "log"'s in-place upgrade of the pod at at. With done, the
// containers it restarts ran as other containers before (so they have restarted); else they
// still run as recorded.
func upgradedAt(at time.Time, done bool) gen.PodModifier {
	return func(p *corev1.Pod) {
		last := map[string]pub.InPlaceUpdateContainerStatus{}
		for _, st := range append(append([]corev1.ContainerStatus(nil), p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...) {
			if st.Name != agentName && st.Name != proxyName {
				continue
			}
			id := st.ContainerID
			if done {
				id += "-before"
			}
			last[st.Name] = pub.InPlaceUpdateContainerStatus{ContainerID: id}
		}
		raw, _ := json.Marshal(map[string]*pub.InPlaceUpdateState{"log": {Revision: "log-new", UpdateTimestamp: metav1.NewTime(at),
			LastContainerStatuses: last, UpdateImages: true}})
		gen.AddPodAnnotations(map[string]string{sidecarrules.InPlaceUpdateStateAnnotation: string(raw)})(p)
	}
}

// pending: the pod was never scheduled; it has no container statuses and no Ready condition.
func pending(p *corev1.Pod) {
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
}

func all(mods ...gen.PodModifier) gen.PodModifier {
	return func(p *corev1.Pod) {
		for _, m := range mods {
			m(p)
		}
	}
}

// TestChooseCountsOnlyItsOwnDisruption: maxUnavailable 1, pods p-0..p-2 ready at v1, and p-3 as
// each case makes it; the pass runs 200ms into t0's second.
func TestChooseCountsOnlyItsOwnDisruption(t *testing.T) {
	v1, v2 := sidecarSetAt("1"), sidecarSetAt("2")
	h, err := hashesOf(v2)
	require.NoError(t, err)
	hour, minute := time.Hour, time.Minute
	cases := []struct {
		name        string
		atV2        bool
		mod         gen.PodModifier
		wantUpgrade []string
		wantRecheck time.Duration
	}{{
		name: "crash-looping before the rollout: upgraded at no cost, and a ready pod beside it",
		mod:  unreadySince(t0.Add(-hour)), wantUpgrade: []string{"p-3", "p-0"},
	}, {
		name: "upgraded while crash-looping: holds nothing",
		atV2: true, mod: all(upgradedAt(t0.Add(-10*minute), true), unreadySince(t0.Add(-hour))), wantUpgrade: []string{"p-0"},
	}, {
		name: "made not Ready after its upgrade: holds the budget",
		atV2: true, mod: all(upgradedAt(t0.Add(-10*minute), true), unreadySince(t0.Add(-9*minute))),
	}, {
		name: "not Ready since the second of its upgrade: holds the budget",
		atV2: true, mod: all(upgradedAt(t0.Add(-10*minute), true), unreadySince(t0.Add(-10*minute+500*time.Millisecond))),
	}, {
		name: "upgrade running on a Ready pod: holds the budget",
		atV2: true, mod: upgradedAt(t0.Add(-time.Second), false),
	}, {
		name: "upgrade running on a pod not Ready before it: holds nothing",
		atV2: true, mod: all(upgradedAt(t0.Add(-10*minute), false), unreadySince(t0.Add(-hour))), wantUpgrade: []string{"p-0"},
	}, {
		name: "upgraded while pending, never scheduled: holds nothing",
		atV2: true, mod: all(pending, upgradedAt(t0.Add(-10*minute), false)), wantUpgrade: []string{"p-0"},
	}, {
		name: "injected at the current version and still starting: holds nothing",
		atV2: true, mod: unreadySince(t0.Add(-5 * time.Second)), wantUpgrade: []string{"p-0"},
	}, {
		name: "updated by its own workload in place after the upgrade: the workload's to count",
		atV2: true, mod: all(upgradedAt(t0.Add(-10*minute), true), cloneSetUpdating, unreadySince(t0.Add(-minute))), wantUpgrade: []string{"p-0"},
	}, {
		name: "turned not Ready this second: waits for the next, a ready pod goes",
		mod:  unreadySince(t0), wantUpgrade: []string{"p-0"}, wantRecheck: 800 * time.Millisecond,
	}, {
		name: "not Ready by a clock ahead of the controller's: waits until that second is past",
		mod:  unreadySince(t0.Add(3 * time.Second)), wantUpgrade: []string{"p-0"}, wantRecheck: 3800 * time.Millisecond,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var views []podView
			for i, name := range podNames("p", 4) {
				at, mod := v1, gen.PodModifier(func(*corev1.Pod) {})
				if i == 3 {
					mod = tc.mod
					if tc.atV2 {
						at = v2
					}
				}
				v, ok := viewPod(v2, h, injectedPod(t, name, at, mod))
				require.True(t, ok)
				views = append(views, v)
			}
			ch, err := choose(v2, views, t0.Add(200*time.Millisecond))
			require.NoError(t, err)
			var got []string
			for _, p := range ch.upgrade {
				got = append(got, p.Name)
			}
			assert.Equal(t, tc.wantUpgrade, got)
			assert.Equal(t, tc.wantRecheck, ch.recheck)
		})
	}
}

// TestSyncUpgradesReadyPodsOneAtATimeBesideACrashLoopingPod: a crash-looping pod of another
// tenant is upgraded, and the ready pods go on one at a time.
func TestSyncUpgradesReadyPodsOneAtATimeBesideACrashLoopingPod(t *testing.T) {
	v1, v2 := sidecarSetAt("1"), sidecarSetAt("2")
	crashing := injectedPod(t, "crashing", v1, unreadySince(t0.Add(-time.Hour)), gen.SetPodContainerStatus(corev1.ContainerStatus{
		Name: "app", ContainerID: "cri://crashing-app", RestartCount: 40,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}))
	f := newFixture(t, v2, crashing, injectedPod(t, "p-0", v1), injectedPod(t, "p-1", v1), injectedPod(t, "p-2", v1))
	require.NoError(t, f.sync())
	require.Equal(t, []string{"crashing", "p-0"}, f.patchedPods(), "the broken pod costs nothing; one ready pod goes")

	// The kubelet restarted the sidecars of both; the app still crashes.
	next := []*corev1.Pod{f.pod("crashing"), f.pod("p-0"), f.pod("p-1"), f.pod("p-2")}
	for _, p := range next[:2] {
		restartSidecars(v2)(p)
	}
	g := newFixture(t, v2, next[0], next[1], next[2], next[3])
	require.NoError(t, g.sync())
	assert.Equal(t, []string{"p-1"}, g.patchedPods(), "the crashing pod, not Ready since before its upgrade, holds nothing")

	// p-1's new sidecar never turns ready: the pod is not Ready since its upgrade, and holds.
	next = []*corev1.Pod{g.pod("crashing"), g.pod("p-0"), g.pod("p-1"), g.pod("p-2")}
	restartSidecars(v2)(next[2])
	gen.SetPodContainerStatus(corev1.ContainerStatus{Name: agentName, Image: "agent:2", ImageID: "sha-agent:2", ContainerID: "cri://p-1-agent:2"})(next[2])
	unreadySince(t0.Add(2 * time.Second))(next[2])
	k := newFixture(t, v2, next[0], next[1], next[2], next[3])
	require.NoError(t, k.sync())
	assert.Empty(t, k.patchedPods(), "p-1 was made unavailable by the upgrade: p-2 waits")
}

// restartSidecars: the kubelet runs ss's sidecars of the pod as new containers, ready.
func restartSidecars(ss *appsv1beta1.SidecarSet) gen.PodModifier {
	return func(p *corev1.Pod) {
		for _, sc := range ss.Spec.Containers {
			gen.SetPodContainerStatus(corev1.ContainerStatus{Name: sc.Name, Image: sc.Image, ImageID: "sha-" + sc.Image,
				ContainerID: "cri://" + p.Name + "-" + sc.Image, Ready: true})(p)
		}
		for _, sc := range ss.Spec.InitContainers {
			gen.SetPodInitContainerStatus(corev1.ContainerStatus{Name: sc.Name, Image: sc.Image, ImageID: "sha-" + sc.Image,
				ContainerID: "cri://" + p.Name + "-" + sc.Image, Ready: true})(p)
		}
	}
}
