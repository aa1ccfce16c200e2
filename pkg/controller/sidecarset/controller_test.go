package sidecarset

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func (f *fixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	pod, err := f.kube.CoreV1().Pods(podNS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return pod
}

func (f *fixture) revisions() []*appsv1.ControllerRevision {
	f.t.Helper()
	list, err := f.kube.AppsV1().ControllerRevisions(kruiseNS).List(context.Background(), metav1.ListOptions{})
	require.NoError(f.t, err)
	var out []*appsv1.ControllerRevision
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

func TestSyncUpgradesAnImageChangeInPlace(t *testing.T) {
	v1, v2 := sidecarSetAt("1"), sidecarSetAt("2")
	p0, p1 := injectedPod(t, "p-0", v1), injectedPod(t, "p-1", v1)
	f := newFixture(t, v2, p0, p1)
	require.NoError(t, f.sync())

	revs := f.revisions()
	require.Len(t, revs, 1, "the SidecarSet's revision is created in kruise's namespace")
	rev := revs[0]
	assert.Equal(t, map[string]string{sidecarrules.NameLabel: "log", revision.HashLabel: rev.Labels[revision.HashLabel]}, rev.Labels)
	require.Len(t, rev.OwnerReferences, 1)
	assert.Equal(t, "SidecarSet", rev.OwnerReferences[0].Kind)

	assert.Equal(t, []string{"p-0"}, f.patchedPods(), "maxUnavailable 1: one pod at a time")
	got := f.pod("p-0")
	assert.Equal(t, "agent:2", got.Spec.Containers[1].Image, "the regular sidecar gets its new image")
	assert.Equal(t, "app:1", got.Spec.Containers[0].Image, "the app container is left alone")
	assert.Equal(t, "proxy:2", got.Spec.InitContainers[0].Image, "the native sidecar gets its new image")
	h, _ := hashesOf(v2)
	specs, err := sidecarrules.UpgradeSpecs(got, sidecarrules.HashAnnotation)
	require.NoError(t, err)
	assert.Equal(t, h.full, specs["log"].Hash)
	assert.Equal(t, rev.Name, specs["log"].ControllerRevision)
	assert.Equal(t, []string{agentName, proxyName}, specs["log"].SidecarList)
	noImage, _ := sidecarrules.UpgradeSpecs(got, sidecarrules.HashWithoutImageAnnotation)
	assert.Equal(t, h.withoutImage, noImage["log"].Hash)
	states, err := sidecarrules.UpgradeStates(got)
	require.NoError(t, err)
	assert.Equal(t, map[string]pub.InPlaceUpdateContainerStatus{
		agentName: {ImageID: "sha-agent:1", ContainerID: "cri://p-0-agent:1"},
		proxyName: {ImageID: "sha-proxy:1", ContainerID: "cri://p-0-proxy:1"},
	}, states["log"].LastContainerStatuses, "completion is judged by new container IDs")
	assert.Equal(t, rev.Name, states["log"].Revision)
	assert.Equal(t, "agent:1", f.pod("p-1").Spec.Containers[1].Image, "the second pod waits")
	_, hasCond := podConditionOf(got, pub.InPlaceUpdateReady)
	assert.False(t, hasCond, "the pod's readiness is not flipped")

	st := f.status()
	assert.Equal(t, appsv1beta1.SidecarSetStatus{ObservedGeneration: 3, MatchedPods: 2, UpdatedPods: 1, ReadyPods: 1,
		UpdatedReadyPods: 0, LatestRevision: rev.Name}, st)
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], inplace.EventReasonSucceeded)
	assert.Contains(t, events[0], "agent, proxy")
}

func TestUpgradedPodIsReadyOnceItsSidecarsRestarted(t *testing.T) {
	v1, v2 := sidecarSetAt("1"), sidecarSetAt("2")
	f := newFixture(t, v2, injectedPod(t, "p-0", v1))
	require.NoError(t, f.sync())
	upgraded := f.pod("p-0")
	h, _ := hashesOf(v2)

	v, ok := viewPod(v2, h, upgraded)
	require.True(t, ok)
	assert.True(t, v.updated)
	assert.False(t, v.ready, "its sidecars have not restarted yet")
	assert.Equal(t, "container agent has not been restarted yet", v.upgrading)

	restarted := gen.PodFrom(upgraded,
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: agentName, ImageID: "sha-agent:2", ContainerID: "cri://p-0-agent:2", Ready: true}))
	v, _ = viewPod(v2, h, restarted)
	assert.Equal(t, "container proxy has not been restarted yet", v.upgrading, "the native sidecar is waited for too")

	restarted = gen.PodFrom(restarted,
		gen.SetPodInitContainerStatus(corev1.ContainerStatus{Name: proxyName, ImageID: "sha-proxy:2", ContainerID: "cri://p-0-proxy:2", Ready: true}))
	v, _ = viewPod(v2, h, restarted)
	assert.True(t, v.ready && v.updated && v.upgrading == "", "%+v", v)
	assert.Equal(t, counts{matched: 1, updated: 1, ready: 1, updatedReady: 1}, tally([]podView{v}))
}

func TestSyncWaitsForTheCacheToShowItsUpgrade(t *testing.T) {
	v1, v2 := sidecarSetAt("1"), sidecarSetAt("2")
	f := newFixture(t, gen.SidecarSetFrom(v2, gen.SetSidecarSetMaxUnavailable(intstr.FromInt32(1))), injectedPod(t, "p-0", v1), injectedPod(t, "p-1", v1))
	// The API server gives every write a new resourceVersion; the fake tracker does not.
	track := k8stesting.ObjectReaction(f.kube.Tracker())
	f.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := track(a)
		if pod, ok := obj.(*corev1.Pod); ok && err == nil {
			pod.ResourceVersion = "11"
		}
		return handled, obj, err
	})
	require.NoError(t, f.sync())
	require.Equal(t, []string{"p-0"}, f.patchedPods())
	f.kube.ClearActions()
	// The cache still shows p-0 as before its upgrade: ready and not updated.
	delay, err := f.ctrl.sync(testContext(t), f.ss.Name)
	require.NoError(t, err)
	assert.Empty(t, f.patchedPods(), "counted from a stale cache p-1 would be upgraded too, overrunning maxUnavailable")
	assert.Positive(t, delay, "looked at again once the expectation times out")
}

func TestSyncReportsPodsThatCannotBeUpgraded(t *testing.T) {
	v1 := sidecarSetAt("1")
	changed := gen.SidecarSetFrom(sidecarSetAt("2"), func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LEVEL", Value: "debug"}}
	})
	f := newFixture(t, changed, injectedPod(t, "p-0", v1), injectedPod(t, "p-1", v1))
	require.NoError(t, f.sync())
	assert.Empty(t, f.patchedPods(), "a change beyond images is never applied in place")
	events := f.events()
	require.Len(t, events, 1)
	assert.True(t, strings.HasPrefix(events[0], "Warning "+EventReasonNotUpgradable), events[0])
	assert.Contains(t, events[0], "web/p-0, web/p-1")
	assert.Equal(t, 2.0, gaugeValue(t, f.ctrl.metrics.notUpgradable.WithLabelValues("log")))
	st := f.status()
	assert.Equal(t, int32(2), st.MatchedPods)
	assert.Equal(t, int32(0), st.UpdatedPods, "counted not updated")

	require.NoError(t, f.sync())
	assert.Empty(t, f.events(), "the same finding is not reported again")

	f.ctrl.forget("log")
	assert.False(t, f.ctrl.metrics.notUpgradable.DeleteLabelValues("log"), "a deleted SidecarSet's series is dropped")
}

func TestSyncCountsOnlyInjectedActivePods(t *testing.T) {
	v1 := sidecarSetAt("1")
	plain := gen.Pod("plain", gen.SetPodNamespace(podNS), gen.AddPodLabels(map[string]string{appLabel: appValue}))
	deleting := injectedPod(t, "deleting", v1, gen.SetPodDeletionTimestamp(t0))
	finished := injectedPod(t, "finished", v1, gen.SetPodPhase(corev1.PodSucceeded))
	otherNS := injectedPod(t, "elsewhere", v1, gen.SetPodNamespace("other"))
	notUpgraded := gen.SidecarSetFrom(v1, func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: podNS}}
	})
	f := newFixture(t, notUpgraded, injectedPod(t, "p-0", v1), plain, deleting, finished, otherNS)
	require.NoError(t, f.sync())
	st := f.status()
	assert.Equal(t, int32(1), st.MatchedPods, "not injected, being deleted, finished, or in a namespace not selected: not counted")
	assert.Equal(t, int32(1), st.ReadyPods)
	assert.Empty(t, f.patchedPods())
}

func TestSyncKeepsRevisionsStillInUse(t *testing.T) {
	v2 := gen.SidecarSetFrom(sidecarSetAt("2"), func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.RevisionHistoryLimit = ptr.To[int32](1)
		ss.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{CustomVersion: ptr.To("stable")}
	})
	old := func(image string, number int64, lbls map[string]string) *appsv1.ControllerRevision {
		ss := sidecarSetAt(image)
		content, err := revisionContent(ss)
		require.NoError(t, err)
		for k, v := range lbls {
			content.Labels[k] = v
		}
		rev := revision.NewRevision(revision.Owner{Object: v2, Kind: controllerKind, Namespace: kruiseNS,
			Selector: labels.SelectorFromSet(labels.Set{sidecarrules.NameLabel: "log"})}, content, number, nil)
		rev.UID = types.UID("uid-r" + image)
		return rev
	}
	usedByPod := old("a", 1, nil)
	pinned := old("b", 2, map[string]string{appsv1beta1.SidecarSetCustomVersionLabel: "stable"})
	unused1, unused2 := old("c", 3, nil), old("d", 4, nil)
	pod := injectedPod(t, "p-0", sidecarSetAt("a"), func(p *corev1.Pod) {
		for _, key := range []string{sidecarrules.HashAnnotation, sidecarrules.HashWithoutImageAnnotation} {
			specs, _ := sidecarrules.UpgradeSpecs(p, key)
			s := specs["log"]
			s.ControllerRevision = usedByPod.Name
			require.NoError(t, sidecarrules.SetUpgradeSpec(p, key, s))
		}
	})
	f := newFixture(t, v2, []runtime.Object{pod, usedByPod, pinned, unused1, unused2}...)
	require.NoError(t, f.sync())
	var left []string
	for _, r := range f.revisions() {
		left = append(left, r.Name)
	}
	assert.Contains(t, left, usedByPod.Name, "a pod still runs it")
	assert.Contains(t, left, pinned.Name, "injectionStrategy.revision.customVersion names it")
	assert.Contains(t, left, unused2.Name, "the newest unused one is kept by the limit of 1")
	assert.NotContains(t, left, unused1.Name, "beyond revisionHistoryLimit")
	assert.Len(t, left, 4, "with the latest one")
	assert.Equal(t, left[len(left)-1][:4], "log-")
}

func TestUpgradePatchIsMinimal(t *testing.T) {
	v1, v2 := sidecarSetAt("1"), sidecarSetAt("2")
	pod := injectedPod(t, "p-0", v1)
	h, _ := hashesOf(v2)
	data, restarted, err := planUpgrade(v2, h, "log-abc", pod, nil, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{agentName, proxyName}, restarted)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, map[string]any{
		"containers":     []any{map[string]any{"name": agentName, "image": "agent:2"}},
		"initContainers": []any{map[string]any{"name": proxyName, "image": "proxy:2"}},
	}, doc["spec"], "only the images of the injected containers, merged by name")
	meta := doc["metadata"].(map[string]any)
	assert.Equal(t, "10", meta["resourceVersion"], "the pod as read is the precondition")
	assert.Len(t, meta["annotations"], 3)
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, g.Write(&m))
	return m.GetGauge().GetValue()
}

func TestUpgradeRefusesAPodMissingASidecar(t *testing.T) {
	v2 := sidecarSetAt("2")
	pod := injectedPod(t, "p-0", sidecarSetAt("1"))
	pod.Spec.InitContainers = nil
	h, _ := hashesOf(v2)
	_, _, err := planUpgrade(v2, h, "log-abc", pod, nil, t0)
	assert.ErrorContains(t, err, "has no native sidecar proxy", "recording the new hash without the new image would be a lie")
}

func TestSyncLabelsTheLatestRevisionWithItsCustomVersion(t *testing.T) {
	v1 := sidecarSetAt("1")
	f := newFixture(t, v1)
	require.NoError(t, f.sync())
	require.Len(t, f.revisions(), 1)
	assert.NotContains(t, f.revisions()[0].Labels, appsv1beta1.SidecarSetCustomVersionLabel)

	// Only customVersion changes: the same revision, now findable by the version.
	versioned := gen.SidecarSetFrom(v1, func(ss *appsv1beta1.SidecarSet) { ss.Spec.CustomVersion = "stable" })
	g := newFixture(t, versioned, f.revisions()[0])
	require.NoError(t, g.sync())
	revs := g.revisions()
	require.Len(t, revs, 1, "no new revision for a version label")
	assert.Equal(t, "stable", revs[0].Labels[appsv1beta1.SidecarSetCustomVersionLabel])
	assert.Equal(t, revs[0].Name, g.status().LatestRevision)
}

func TestAPodWithAnUnreadableAnnotationIsCountedNeverTouched(t *testing.T) {
	v2 := sidecarSetAt("2")
	h, _ := hashesOf(v2)
	bad := injectedPod(t, "p-0", sidecarSetAt("1"), gen.AddPodAnnotations(map[string]string{sidecarrules.InPlaceUpdateStateAnnotation: "{not json"}))
	v, ok := viewPod(v2, h, bad)
	require.True(t, ok)
	assert.Contains(t, v.busy, sidecarrules.InPlaceUpdateStateAnnotation)
	ch, err := choose(v2, []podView{v}, t0)
	require.NoError(t, err)
	assert.Empty(t, ch.upgrade)
	assert.Contains(t, ch.waiting, podNS+"/p-0")
}

func TestAStuckUpgradeIsRolledOnByTheNextImage(t *testing.T) {
	v1, v2, v3 := sidecarSetAt("1"), sidecarSetAt("2"), sidecarSetAt("3")
	f := newFixture(t, v2, injectedPod(t, "p-0", v1))
	require.NoError(t, f.sync())
	stuck := f.pod("p-0") // at v2, its sidecars never restarted (image pull failing)
	h3, _ := hashesOf(v3)
	v, _ := viewPod(v3, h3, stuck)
	require.NotEmpty(t, v.upgrading)
	ch, err := choose(v3, []podView{v}, t0)
	require.NoError(t, err)
	require.Len(t, ch.upgrade, 1, "a pod stuck on a bad image must not block the fix")

	data, _, err := planUpgrade(v3, h3, "log-v3", stuck, nil, t0)
	require.NoError(t, err)
	var patch upgradePatch
	require.NoError(t, json.Unmarshal(data, &patch))
	states, err := sidecarrules.UpgradeStates(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: patch.Metadata.Annotations}})
	require.NoError(t, err)
	assert.Equal(t, "log-v3", states["log"].Revision)
	assert.Equal(t, "cri://p-0-agent:1", states["log"].LastContainerStatuses[agentName].ContainerID,
		"the container not yet restarted keeps its ID, so the v3 restart is told by it")
}

// TestUpgradeCarriesPatchPodMetadata: as OpenKruise's controller, an upgrade applies the
// SidecarSet's patchPodMetadata as it is now, so a value changed in the SidecarSet reaches the
// pods it upgrades (OpenKruise's e2e case "sidecarSet patch pod metadata").
func TestUpgradeCarriesPatchPodMetadata(t *testing.T) {
	withPatch := func(policy appsv1beta1.SidecarSetPatchPolicyType, v string) func(*appsv1beta1.SidecarSet) {
		return func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{
				Annotations: map[string]string{"example.com/sidecar": v}, PatchPolicy: policy,
			}}
		}
	}
	cases := []struct {
		name   string
		policy appsv1beta1.SidecarSetPatchPolicyType
		want   any // the annotation's value in the patch; nil: not in the patch
	}{
		{"Overwrite sets the new value", appsv1beta1.SidecarSetOverwritePatchPolicy, "v2"},
		{"MergePatchJson merges it", appsv1beta1.SidecarSetMergePatchJsonPatchPolicy, `{"log":"v2","x":"1"}`},
		{"Retain keeps the pod's", appsv1beta1.SidecarSetRetainPatchPolicy, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, value := "v1", "v2"
			if tc.policy == appsv1beta1.SidecarSetMergePatchJsonPatchPolicy {
				old, value = `{"log":"v1","x":"1"}`, `{"log":"v2"}`
			}
			v1 := gen.SidecarSetFrom(sidecarSetAt("1"), withPatch(tc.policy, old))
			v2 := gen.SidecarSetFrom(sidecarSetAt("2"), withPatch(tc.policy, value))
			pod := injectedPod(t, "p-0", v1)
			pod.Annotations["example.com/sidecar"] = old
			h, _ := hashesOf(v2)
			data, _, err := planUpgrade(v2, h, "log-abc", pod, nil, t0)
			require.NoError(t, err)
			var doc struct {
				Metadata struct {
					Annotations map[string]any `json:"annotations"`
				} `json:"metadata"`
			}
			require.NoError(t, json.Unmarshal(data, &doc))
			assert.Equal(t, tc.want, doc.Metadata.Annotations["example.com/sidecar"])
		})
	}
}
