package sidecarrules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func hot(empty string) func(*appsv1beta1.SidecarContainer) {
	return func(c *appsv1beta1.SidecarContainer) {
		c.UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
			UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: empty,
		}
	}
}

func versionEnv(container string) []corev1.EnvVar {
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + key + "']"}}
	}
	return []corev1.EnvVar{
		{Name: "SIDECARSET_VERSION", ValueFrom: ref("version.sidecarset.kruise.io/" + container)},
		{Name: "SIDECARSET_VERSION_ALT", ValueFrom: ref("versionalt.sidecarset.kruise.io/" + container)},
	}
}

func TestInjectHotUpgrade(t *testing.T) {
	tests := []struct {
		name           string
		pod            *corev1.Pod
		sets           []*appsv1beta1.SidecarSet
		wantContainers []string
		wantImages     map[string]string
		wantAnn        map[string]string
		wantList       string
	}{
		{
			name:           "one hot sidecar: working copy -1 on its image, idle -2 on the empty image",
			pod:            appPod(),
			sets:           []*appsv1beta1.SidecarSet{set("mesh", withContainer("envoy", hot("empty:1")))},
			wantContainers: []string{"envoy-1", "envoy-2", "main"},
			wantImages:     map[string]string{"envoy-1": "envoy:1", "envoy-2": "empty:1"},
			wantAnn: map[string]string{
				WorkingHotUpgradeAnnotation:               `{"envoy":"envoy-1"}`,
				"version.sidecarset.kruise.io/envoy-1":    "1",
				"versionalt.sidecarset.kruise.io/envoy-1": "0",
				"version.sidecarset.kruise.io/envoy-2":    "0",
				"versionalt.sidecarset.kruise.io/envoy-2": "1",
			},
			wantList: "envoy",
		},
		{
			name: "a cold sidecar beside it is injected once, and another set's working entry is kept",
			pod: appPod(func(p *corev1.Pod) {
				p.Annotations = map[string]string{WorkingHotUpgradeAnnotation: `{"other":"other-2"}`}
			}),
			sets: []*appsv1beta1.SidecarSet{set("mesh",
				withContainer("envoy", hot("empty:1"), policy(appsv1beta1.AfterAppContainerType)),
				withContainer("log"))},
			wantContainers: []string{"log", "main", "envoy-1", "envoy-2"},
			wantImages:     map[string]string{"envoy-1": "envoy:1", "envoy-2": "empty:1", "log": "log:1"},
			wantAnn:        map[string]string{WorkingHotUpgradeAnnotation: `{"envoy":"envoy-1","other":"other-2"}`},
			wantList:       "envoy,log",
		},
		{
			name: "an unreadable working annotation is replaced, as OpenKruise does",
			pod: appPod(func(p *corev1.Pod) {
				p.Annotations = map[string]string{WorkingHotUpgradeAnnotation: `nope`}
			}),
			sets:           []*appsv1beta1.SidecarSet{set("mesh", withContainer("envoy", hot("empty:1")))},
			wantContainers: []string{"envoy-1", "envoy-2", "main"},
			wantAnn:        map[string]string{WorkingHotUpgradeAnnotation: `{"envoy":"envoy-1"}`},
			wantList:       "envoy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Inject(tt.pod, "ns", tt.sets, injectedAt, InjectOptions{})
			require.NoError(t, err)
			var names []string
			for _, c := range out.Spec.Containers {
				names = append(names, c.Name)
				if img, ok := tt.wantImages[c.Name]; ok {
					assert.Equal(t, img, c.Image, c.Name)
				}
			}
			assert.Equal(t, tt.wantContainers, names)
			for k, v := range tt.wantAnn {
				assert.Equal(t, v, out.Annotations[k], k)
			}
			specs, err := UpgradeSpecs(out, HashAnnotation)
			require.NoError(t, err)
			assert.Equal(t, tt.wantList, joinNames(specs["mesh"].SidecarList))
			for _, c := range out.Spec.Containers {
				if c.Name != "envoy-1" && c.Name != "envoy-2" {
					continue
				}
				n := len(c.Env)
				require.GreaterOrEqual(t, n, 3, c.Name)
				assert.Equal(t, versionEnv(c.Name), c.Env[n-2:], "the version env comes last, read from the copy's annotations")
				assert.Equal(t, corev1.EnvVar{Name: InjectedEnv, Value: "true"}, c.Env[0])
			}
		})
	}
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ","
		}
		out += n
	}
	return out
}

func TestWorkingAndIdle(t *testing.T) {
	tests := []struct {
		working            map[string]string
		wantWork, wantIdle string
	}{
		{map[string]string{"envoy": "envoy-1"}, "envoy-1", "envoy-2"},
		{map[string]string{"envoy": "envoy-2"}, "envoy-2", "envoy-1"},
		// OpenKruise's reading: anything but -1 recorded means -2 works.
		{map[string]string{}, "envoy-2", "envoy-1"},
	}
	for _, tt := range tests {
		w, i := WorkingAndIdle(tt.working, "envoy")
		assert.Equal(t, tt.wantWork, w)
		assert.Equal(t, tt.wantIdle, i)
	}
}
