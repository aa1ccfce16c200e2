package sidecarset

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// withAgentPolicy gives the regular sidecar a resourcesPolicy computing its cpu limit as expr.
func withAgentPolicy(expr string) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Containers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{
			TargetContainersMode: appsv1beta1.TargetContainersModeSum, TargetContainersNameRegex: ".*",
			ResourcesExpr: appsv1beta1.ResourcesExpr{Limits: &appsv1beta1.ResourceExprLimits{CPU: expr}},
		}
	}
}

// computedAgentResources stands for what injection computed: the pod's agent has a cpu limit.
func computedAgentResources(p *corev1.Pod) {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == agentName {
			p.Spec.Containers[i].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
		}
	}
}

// A resourcesPolicy is part of both hashes (as in OpenKruise, whose hashes encode the whole
// containers): changing it alone is a change beyond images, which running pods never get in
// place. They are counted not updated and reported, and get the new policy when recreated.
func TestSyncLeavesAResourcesPolicyChangeToNewPods(t *testing.T) {
	v1 := sidecarSetAt("1", withAgentPolicy("cpu*50%"))
	changed := sidecarSetAt("1", withAgentPolicy("cpu*25%"))
	h1, err := hashesOf(v1)
	require.NoError(t, err)
	h2, err := hashesOf(changed)
	require.NoError(t, err)
	require.NotEqual(t, h1.withoutImage, h2.withoutImage)

	f := newFixture(t, changed, injectedPod(t, "p-0", v1, computedAgentResources))
	require.NoError(t, f.sync())

	assert.Empty(t, f.patchedPods())
	events := f.events()
	require.Len(t, events, 1)
	assert.True(t, strings.HasPrefix(events[0], "Warning "+EventReasonNotUpgradable), events[0])
	assert.Equal(t, int32(0), f.status().UpdatedPods)
}

// An image upgrade writes images only: the resources injection computed stay.
func TestImageUpgradeKeepsComputedResources(t *testing.T) {
	v1 := sidecarSetAt("1", withAgentPolicy("cpu*50%"))
	v2 := sidecarSetAt("2", withAgentPolicy("cpu*50%"))
	f := newFixture(t, v2, injectedPod(t, "p-0", v1, computedAgentResources))
	require.NoError(t, f.sync())

	require.Equal(t, []string{"p-0"}, f.patchedPods())
	got := f.pod("p-0")
	assert.Equal(t, "agent:2", got.Spec.Containers[1].Image)
	limit := got.Spec.Containers[1].Resources.Limits[corev1.ResourceCPU]
	assert.Equal(t, "500m", limit.String())
}
