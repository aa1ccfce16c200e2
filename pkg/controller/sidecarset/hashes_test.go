package sidecarset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// The SidecarSet itself carries the hashes its pods record, as OpenKruise's does, also when no
// webhook wrote them, and again after its spec changed.
func TestSyncWritesTheHashAnnotations(t *testing.T) {
	v1 := sidecarSetAt("1")
	pod := injectedPod(t, "p-0", v1)
	f := newFixture(t, v1, pod)
	require.NoError(t, f.sync())
	stored, err := f.kruise.AppsV1beta1().SidecarSets().Get(context.Background(), "log", metav1.GetOptions{})
	require.NoError(t, err)
	specs, err := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashAnnotation)
	require.NoError(t, err)
	noImage, err := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashWithoutImageAnnotation)
	require.NoError(t, err)
	assert.Equal(t, specs["log"].Hash, stored.Annotations[sidecarrules.HashAnnotation])
	assert.Equal(t, noImage["log"].Hash, stored.Annotations[sidecarrules.HashWithoutImageAnnotation])
	assert.Equal(t, int32(1), stored.Status.UpdatedPods, "the status is written after the annotations")

	stale := gen.SidecarSetFrom(sidecarSetAt("2"), func(ss *appsv1beta1.SidecarSet) { ss.Annotations = stored.Annotations })
	f = newFixture(t, stale)
	require.NoError(t, f.sync())
	stored, err = f.kruise.AppsV1beta1().SidecarSets().Get(context.Background(), "log", metav1.GetOptions{})
	require.NoError(t, err)
	h, err := hashesOf(sidecarSetAt("2"))
	require.NoError(t, err)
	assert.Equal(t, h.full, stored.Annotations[sidecarrules.HashAnnotation], "an image change changes the hash")
	assert.Equal(t, noImage["log"].Hash, stored.Annotations[sidecarrules.HashWithoutImageAnnotation], "and not the hash without images")

	f = newFixture(t, stored)
	require.NoError(t, f.sync())
	for _, a := range f.kruise.Actions() {
		assert.NotEqual(t, "patch", a.GetVerb(), "current annotations are not written again")
	}
}

// A canary SidecarSet (updateStrategy NotUpdate) is counted as any other: its Ready pods are
// ready, as OpenKruise's status counts every SidecarSet's, and nothing is upgraded.
func TestSyncCountsANotUpdateCanary(t *testing.T) {
	canary := gen.SidecarSetFrom(sidecarSetAt("1"), func(ss *appsv1beta1.SidecarSet) {
		ss.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: "mesh"}
		ss.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
	})
	f := newFixture(t, gen.SidecarSetFrom(canary, func(ss *appsv1beta1.SidecarSet) { ss.Spec.Containers[0].Image = "agent:2" }),
		injectedPod(t, "ready", canary), injectedPod(t, "starting", canary, notReady))
	require.NoError(t, f.sync())
	st := f.status()
	assert.Equal(t, appsv1beta1.SidecarSetStatus{MatchedPods: 2, UpdatedPods: 0, ReadyPods: 1, UpdatedReadyPods: 0},
		appsv1beta1.SidecarSetStatus{MatchedPods: st.MatchedPods, UpdatedPods: st.UpdatedPods, ReadyPods: st.ReadyPods, UpdatedReadyPods: st.UpdatedReadyPods})
	assert.Empty(t, f.patchedPods(), "NotUpdate upgrades nothing")
}
