package sidecarset

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	envoyName  = "envoy"
	emptyImage = "empty:1"
)

// hotSetAt is SidecarSet "mesh" with HotUpgrade sidecar envoy at image envoy:v, at
// resourceVersion "rv-<v>".
func hotSetAt(v string, mods ...gen.SidecarSetModifier) *appsv1beta1.SidecarSet {
	base := []gen.SidecarSetModifier{
		gen.SetSidecarSetSelector(map[string]string{appLabel: appValue}),
		gen.AddSidecarSetContainer(gen.Container(envoyName, gen.SetContainerImage("envoy:"+v))),
	}
	// The upgrade strategy, generation and resourceVersion are the scenario's whatever mods set.
	return gen.SidecarSet("mesh", append(append(base, mods...),
		gen.SetSidecarSetUpgradeStrategy(envoyName, appsv1beta1.SidecarContainerUpgradeStrategy{
			UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage}),
		gen.SetSidecarSetGeneration(3), gen.SetSidecarSetResourceVersion("rv-"+v))...)
}

// hotPod is a running, ready pod injected by sidecarset.Inject with ss, its containers running
// (IDs cri://<pod>-<container>-<image>).
func hotPod(t *testing.T, name string, ss *appsv1beta1.SidecarSet, mods ...gen.PodModifier) *corev1.Pod {
	t.Helper()
	base := gen.Pod(name, gen.SetPodNamespace(podNS), gen.SetPodUID(types.UID(name)), gen.SetPodResourceVersion("10"),
		gen.AddPodLabels(map[string]string{appLabel: appValue}),
		gen.AddPodContainer(gen.Container("app", gen.SetContainerImage("app:1"))))
	pod, err := sidecarrules.Inject(base, podNS, []*appsv1beta1.SidecarSet{ss}, metav1.NewTime(t0), sidecarrules.InjectOptions{})
	require.NoError(t, err)
	gen.SetPodPhase(corev1.PodRunning)(pod)
	gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})(pod)
	for _, c := range pod.Spec.Containers {
		running(c.Name, c.Image)(pod)
	}
	return gen.PodFrom(pod, mods...)
}

// running: container name runs image, ready.
func running(name, image string) gen.PodModifier {
	return func(p *corev1.Pod) {
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: name, Image: image, ImageID: "sha-" + image,
			ContainerID: "cri://" + p.Name + "-" + name + "-" + image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})(p)
	}
}

// pulling: container name cannot pull its image, so the pod turned not Ready at t0, when the
// fixture's upgrade was written.
func pulling(name, image string) gen.PodModifier {
	return func(p *corev1.Pod) {
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: name, Image: image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}})(p)
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)})(p)
	}
}

func imageOf(p *corev1.Pod, name string) string {
	if c := findContainer(p.Spec.Containers, name); c != nil {
		return c.Image
	}
	return ""
}

func TestHotUpgradeStartsTheNewImageInTheIdleCopy(t *testing.T) {
	v1, v2 := hotSetAt("1"), hotSetAt("2")
	f := newFixture(t, v2, hotPod(t, "p-0", v1), hotPod(t, "p-1", v1))
	require.NoError(t, f.sync())

	require.Equal(t, []string{"p-0"}, f.patchedPods(), "maxUnavailable 1: one pod at a time")
	got := f.pod("p-0")
	assert.Equal(t, "envoy:2", imageOf(got, "envoy-2"), "the idle copy gets the new image")
	assert.Equal(t, "envoy:1", imageOf(got, "envoy-1"), "the working copy keeps running")
	assert.Equal(t, "app:1", imageOf(got, "app"))
	assert.Equal(t, `{"envoy":"envoy-2"}`, got.Annotations[sidecarrules.WorkingHotUpgradeAnnotation], "the new copy works from now on")
	assert.Equal(t, map[string]string{"envoy-1": "1", "envoy-2": "rv-2"}, versions(got, sidecarrules.VersionAnnotation))
	assert.Equal(t, map[string]string{"envoy-1": "rv-2", "envoy-2": "1"}, versions(got, sidecarrules.VersionAltAnnotation),
		"while handing over each copy sees the other's version")
	states, err := sidecarrules.UpgradeStates(got)
	require.NoError(t, err)
	assert.Equal(t, []string{"envoy-2"}, sortedKeys(states["mesh"].LastContainerStatuses), "only the new copy restarts")
	specs, err := sidecarrules.UpgradeSpecs(got, sidecarrules.HashAnnotation)
	require.NoError(t, err)
	assert.Equal(t, []string{envoyName}, specs["mesh"].SidecarList, "the sidecar's name, as OpenKruise records it")

	st := f.status()
	assert.Equal(t, int32(1), st.UpdatedPods)
	assert.Equal(t, int32(1), st.ReadyPods, "the pod handing over is not ready to the SidecarSet")
}

func versions(p *corev1.Pod, key func(string) string) map[string]string {
	return map[string]string{"envoy-1": p.Annotations[key("envoy-1")], "envoy-2": p.Annotations[key("envoy-2")]}
}

// stepOne is p-0 after the first write of its upgrade from v1 to v2, and p-1 not yet upgraded.
func stepOne(t *testing.T, v1, v2 *appsv1beta1.SidecarSet) *corev1.Pod {
	t.Helper()
	f := newFixture(t, v2, hotPod(t, "p-0", v1))
	require.NoError(t, f.sync())
	return f.pod("p-0")
}

func TestHotUpgradeFlipsOnceTheNewCopyIsReady(t *testing.T) {
	v1, v2 := hotSetAt("1"), hotSetAt("2")
	tests := []struct {
		name     string
		mods     []gen.PodModifier
		strategy func(*appsv1beta1.SidecarSet)
		flipped  bool
		blocked  string
	}{
		{name: "the new copy restarted and ready: the old one goes to the empty image",
			mods: []gen.PodModifier{running("envoy-2", "envoy:2")}, flipped: true},
		{name: "the new copy not restarted yet: wait",
			mods: nil},
		{name: "the new copy cannot pull its image: wait, report, never loop",
			mods: []gen.PodModifier{pulling("envoy-2", "envoy:2")}, blocked: "ImagePullBackOff"},
		{name: "paused: no flip either, as OpenKruise",
			mods: []gen.PodModifier{running("envoy-2", "envoy:2")}, strategy: func(ss *appsv1beta1.SidecarSet) { ss.Spec.UpdateStrategy.Paused = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p0 := gen.PodFrom(stepOne(t, v1, v2), tt.mods...)
			ss := hotSetAt("2")
			if tt.strategy != nil {
				tt.strategy(ss)
			}
			f := newFixture(t, ss, p0, hotPod(t, "p-1", v1))
			require.NoError(t, f.sync())
			if !tt.flipped {
				assert.Empty(t, f.patchedPods(), "p-0 still hands over: p-1 waits by maxUnavailable")
				events := strings.Join(f.events(), "\n")
				if tt.blocked != "" {
					assert.Contains(t, events, EventReasonHotUpgradeBlocked)
					assert.Contains(t, events, tt.blocked)
					require.NoError(t, f.sync())
					assert.Empty(t, f.events(), "reported once")
				} else {
					assert.NotContains(t, events, EventReasonHotUpgradeBlocked)
				}
				return
			}
			require.Equal(t, []string{"p-0"}, f.patchedPods(), "a pass that flips upgrades no other pod")
			got := f.pod("p-0")
			assert.Equal(t, emptyImage, imageOf(got, "envoy-1"))
			assert.Equal(t, "envoy:2", imageOf(got, "envoy-2"))
			assert.Equal(t, `{"envoy":"envoy-2"}`, got.Annotations[sidecarrules.WorkingHotUpgradeAnnotation])
			assert.Equal(t, map[string]string{"envoy-1": "0", "envoy-2": "rv-2"}, versions(got, sidecarrules.VersionAnnotation))
			assert.Equal(t, map[string]string{"envoy-1": "rv-2", "envoy-2": "0"}, versions(got, sidecarrules.VersionAltAnnotation))
			states, err := sidecarrules.UpgradeStates(got)
			require.NoError(t, err)
			assert.Equal(t, []string{"envoy-1", "envoy-2"}, sortedKeys(states["mesh"].LastContainerStatuses),
				"the old copy's restart on the empty image is waited for too")
			assert.Contains(t, strings.Join(f.events(), "\n"), EventReasonHotUpgradeFlipped)

			h, _ := hashesOf(ss)
			v, _ := viewPod(ss, h, got)
			assert.False(t, v.ready, "not ready until the old copy runs the empty image")
			assert.Empty(t, v.handingOver)
			done := gen.PodFrom(got, running("envoy-1", emptyImage))
			v, _ = viewPod(ss, h, done)
			assert.True(t, v.ready && v.updated, "%+v", v)
		})
	}
}

func TestHotTarget(t *testing.T) {
	sc := &hotSetAt("3").Spec.Containers[0]
	pod := func(img1, img2, working string, mods ...gen.PodModifier) *corev1.Pod {
		p := hotPod(t, "p", hotSetAt("1"))
		p.Spec.Containers[0].Image, p.Spec.Containers[1].Image = img1, img2
		p.Annotations[sidecarrules.WorkingHotUpgradeAnnotation] = `{"envoy":"` + working + `"}`
		return gen.PodFrom(p, mods...)
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		target string
	}{
		{"the copy on the empty image (-2)", pod("envoy:1", emptyImage, "envoy-1"), "envoy-2"},
		{"the copy on the empty image (-1)", pod(emptyImage, "envoy:2", "envoy-2"), "envoy-1"},
		{"a failed new copy is replaced, the working old one kept",
			pod("envoy:1", "bad:2", "envoy-2", pulling("envoy-2", "bad:2")), "envoy-2"},
		{"the not-ready one, whichever is recorded working",
			pod("bad:2", "envoy:1", "envoy-2", pulling("envoy-1", "bad:2")), "envoy-1"},
		{"both ready (a flip not written yet): the one not working", pod("envoy:1", "envoy:2", "envoy-2"), "envoy-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			working, err := sidecarrules.WorkingCopies(tt.pod)
			require.NoError(t, err)
			target, _ := hotTarget(sc, tt.pod, working, nil)
			assert.Equal(t, tt.target, target)
		})
	}
}

func TestAFailedHotUpgradeIsRolledOnByTheNextImage(t *testing.T) {
	v1, bad, v3 := hotSetAt("1"), hotSetAt("bad"), hotSetAt("3")
	stuck := gen.PodFrom(stepOne(t, v1, bad), pulling("envoy-2", "envoy:bad"))
	f := newFixture(t, gen.SidecarSetFrom(v3, gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(1))), stuck)
	require.NoError(t, f.sync())
	require.Equal(t, []string{"p-0"}, f.patchedPods(), "a pod stuck on a bad image must not block the fix")
	got := f.pod("p-0")
	assert.Equal(t, "envoy:3", imageOf(got, "envoy-2"), "the failed copy gets the fix")
	assert.Equal(t, "envoy:1", imageOf(got, "envoy-1"), "the old copy keeps working meanwhile")
	assert.Equal(t, `{"envoy":"envoy-2"}`, got.Annotations[sidecarrules.WorkingHotUpgradeAnnotation])
	assert.Equal(t, "1", got.Annotations[sidecarrules.VersionAltAnnotation("envoy-2")])
	assert.Equal(t, "rv-3", got.Annotations[sidecarrules.VersionAnnotation("envoy-2")])
}

func TestHotUpgradeLeavesAPodOnTheImageAlready(t *testing.T) {
	v1 := hotSetAt("1")
	ss := gen.SidecarSetFrom(hotSetAt("1"), func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Containers[0].Args = []string{"--v"} // hash changes, not the image
	})
	pod := hotPod(t, "p-0", v1)
	h, _ := hashesOf(ss)
	v, _ := viewPod(ss, h, pod)
	assert.False(t, v.upgradable, "more than images changed")
	var state *pub.InPlaceUpdateState
	working, _ := sidecarrules.WorkingCopies(pod)
	target, _, err := hotUpgradeStep(v1, &v1.Spec.Containers[0], pod, working, state, map[string]string{})
	require.NoError(t, err)
	assert.Empty(t, target, "the working copy runs the image: nothing to restart")
}

func TestAFailedHotUpgradeRolledBackRestoresTheOldCopy(t *testing.T) {
	v1, bad := hotSetAt("1"), hotSetAt("bad")
	stuck := gen.PodFrom(stepOne(t, v1, bad), pulling("envoy-2", "envoy:bad"))
	f := newFixture(t, hotSetAt("1"), stuck)
	require.NoError(t, f.sync())
	require.Equal(t, []string{"p-0"}, f.patchedPods())
	got := f.pod("p-0")
	assert.Equal(t, emptyImage, imageOf(got, "envoy-2"), "the failed copy goes back to the empty image")
	assert.Equal(t, "envoy:1", imageOf(got, "envoy-1"), "the old copy is untouched")
	assert.Equal(t, `{"envoy":"envoy-1"}`, got.Annotations[sidecarrules.WorkingHotUpgradeAnnotation], "and works again")
	assert.Equal(t, "0", got.Annotations[sidecarrules.VersionAnnotation("envoy-2")])
	assert.Equal(t, "0", got.Annotations[sidecarrules.VersionAltAnnotation("envoy-1")])
	h, _ := hashesOf(hotSetAt("1"))
	v, _ := viewPod(hotSetAt("1"), h, gen.PodFrom(got, running("envoy-2", emptyImage)))
	assert.Empty(t, v.handingOver, "no hand-over left")
	assert.True(t, v.updated)
}

func TestARevertBeforeTheFlipHandsBackWithoutARestart(t *testing.T) {
	v1, v2 := hotSetAt("1"), hotSetAt("2")
	// Step 1 done, the new copy ready, the flip not written yet; the SidecarSet goes back to v1.
	p := gen.PodFrom(stepOne(t, v1, v2), running("envoy-2", "envoy:2"))
	h, _ := hashesOf(v1)
	data, restarted, err := planUpgrade(hotSetAt("1"), h, "mesh-v1", p, nil, t0)
	require.NoError(t, err)
	assert.Empty(t, restarted, "envoy-1 runs envoy:1 still: it only takes the work back")
	var patch upgradePatch
	require.NoError(t, json.Unmarshal(data, &patch))
	assert.Empty(t, patch.Spec.Containers)
	assert.Equal(t, `{"envoy":"envoy-1"}`, patch.Metadata.Annotations[sidecarrules.WorkingHotUpgradeAnnotation])
	assert.Equal(t, "rv-1", patch.Metadata.Annotations[sidecarrules.VersionAnnotation("envoy-1")])
	after := gen.PodFrom(p, func(p *corev1.Pod) {
		for k, v := range patch.Metadata.Annotations {
			p.Annotations[k] = v
		}
	})
	old, err := handingOver(hotSetAt("1"), after)
	require.NoError(t, err)
	assert.Equal(t, []string{"envoy-2"}, old, "the flip then puts envoy-2 back on the empty image")
}

func TestAHandOverOnAPodBrokenBeforeItHoldsNoBudget(t *testing.T) {
	v1, v2 := hotSetAt("1"), hotSetAt("2")
	// p-0's app crash-loops since before its upgrade: its new copy runs, but the flip waits on
	// every container being ready, so the hand-over never ends.
	p0 := gen.PodFrom(stepOne(t, v1, v2), running("envoy-2", "envoy:2"), unreadySince(t0.Add(-time.Hour)),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "app", ContainerID: "cri://p-0-app", Ready: false}))
	f := newFixture(t, hotSetAt("2"), p0, hotPod(t, "p-1", v1))
	require.NoError(t, f.sync())
	assert.Equal(t, []string{"p-1"}, f.patchedPods(), "p-0 was unavailable before the SidecarSet took it")
}
