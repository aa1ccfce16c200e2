package sidecarset

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// withAgentResources gives the agent sidecar cpu and memory requests and limits.
func withAgentResources(cpu, mem string) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		ss.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
}

func sized(v, cpu, mem string, mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	ss := sidecarSetAt(v)
	withAgentResources(cpu, mem)(ss)
	for _, m := range mods {
		m(ss)
	}
	return ss
}

// olderIs is a resizer whose history holds old under the name the injected pods record.
func olderIs(old *appsv1beta1.SidecarSet, noResize string) *resizer {
	return &resizer{noResize: noResize, older: func(name string) (*appsv1beta1.SidecarSet, error) {
		if name != "log-old" {
			return nil, errors.New("no revision " + name)
		}
		return old, nil
	}}
}

func TestSidecarResizeIsUpgradable(t *testing.T) {
	old := sized("1", "50m", "32Mi")
	for name, tc := range map[string]struct {
		cur      *appsv1beta1.SidecarSet
		noResize string
		// want: the agent's new cpu request when upgradable; "" when not.
		want string
	}{
		"cpu and memory":         {cur: sized("1", "80m", "48Mi"), want: "80m"},
		"cpu, memory and images": {cur: sized("2", "80m", "48Mi"), want: "80m"},
		"pods cannot be resized": {cur: sized("1", "80m", "48Mi"), noResize: "gate off"},
		"an env var too":         {cur: sized("1", "80m", "48Mi", func(ss *appsv1beta1.SidecarSet) { ss.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}} })},
		"a resource name added": {cur: sized("1", "80m", "48Mi", func(ss *appsv1beta1.SidecarSet) {
			delete(ss.Spec.Containers[0].Resources.Limits, corev1.ResourceMemory)
		})},
		"the native sidecar resized": {cur: sized("1", "50m", "32Mi", func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.InitContainers[0].Resources = old.Spec.Containers[0].Resources
		})},
		"the pod's QoS class changes": {cur: sized("1", "80m", "48Mi", func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("10m")
		})},
	} {
		t.Run(name, func(t *testing.T) {
			// The app container and the native sidecar are Guaranteed too, so the pod is; a
			// request under the limit would make it Burstable, which the API server refuses.
			pod := injectedPod(t, "p", old, func(p *corev1.Pod) {
				l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
				p.Spec.InitContainers[0].Resources = corev1.ResourceRequirements{Requests: l.DeepCopy(), Limits: l.DeepCopy()}
			})
			h, err := hashesOf(tc.cur)
			require.NoError(t, err)
			h.resize = olderIs(old, tc.noResize)
			v, ok := viewPod(tc.cur, h, pod)
			require.True(t, ok)
			assert.False(t, v.updated)
			if tc.want == "" {
				assert.False(t, v.upgradable)
				assert.Nil(t, v.resize)
				return
			}
			require.True(t, v.upgradable)
			require.NotNil(t, v.resize)
			assert.Equal(t, []string{agentName}, sortedKeys(v.resize.ContainerResources))
			got := v.resize.ContainerResources[agentName].Requests[corev1.ResourceCPU]
			assert.Equal(t, tc.want, got.String())

			data, restarted, err := planUpgrade(tc.cur, h, "log-new", pod, v.resize, t0)
			require.NoError(t, err)
			var patch struct {
				Metadata struct{ Annotations map[string]string }
				Spec     struct{ Containers []map[string]any }
			}
			require.NoError(t, json.Unmarshal(data, &patch))
			for _, c := range patch.Spec.Containers {
				assert.NotContains(t, c, "resources", "resources go through pods/resize, never the pod patch")
			}
			states := map[string]map[string]any{}
			require.NoError(t, json.Unmarshal([]byte(patch.Metadata.Annotations[sidecarrules.InPlaceUpdateStateAnnotation]), &states))
			assert.Equal(t, true, states["log"]["updateResources"])
			if tc.cur.Spec.Containers[0].Image == old.Spec.Containers[0].Image {
				assert.Empty(t, restarted, "a resize alone restarts nothing")
				assert.Equal(t, "RESIZE", string(upgradeOperation(pod, restarted, v.resize)))
			} else {
				assert.Equal(t, "UPDATE", string(upgradeOperation(pod, restarted, v.resize)))
			}
		})
	}
}

// Without a resizer (or a revision to compare with) a resources change stays not upgradable,
// as in OpenKruise.
func TestSidecarResizeNeedsTheRecordedRevision(t *testing.T) {
	old, cur := sized("1", "50m", "32Mi"), sized("1", "80m", "48Mi")
	pod := injectedPod(t, "p", old)
	h, err := hashesOf(cur)
	require.NoError(t, err)
	v, _ := viewPod(cur, h, pod)
	assert.False(t, v.upgradable, "no resizer")
	h.resize = &resizer{older: func(string) (*appsv1beta1.SidecarSet, error) { return nil, errors.New("gone") }}
	v, _ = viewPod(cur, h, pod)
	assert.False(t, v.upgradable, "revision gone")
}
